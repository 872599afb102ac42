#include "workers/rollout/backend/hosted_policies.h"

#include <utility>

#include "workers/model/model_download.h"
#include "workers/model/nn/decoder_model.h"

namespace sluice::rollout {
namespace {

// A uri model: downloads it into its cache entry (or finds it there complete), after which it
// loads as a path model does; nothing for the other sources.
Status FetchPolicyModel(const HostedPolicy& p, std::shared_ptr<http::HostsFileResolver> resolver,
                        const CancellationToken& cancel, log::Logger& logger) {
  if (p.model.uri.empty()) return Status::Ok();
  model::ModelDownloadOptions o;
  o.resolver = std::move(resolver);
  o.cancel = cancel;
  o.on_file = [&](const std::string& file, uint64_t bytes) {
    logger.Info("model file downloaded", {{"policy", p.name}, {"file", file}, {"bytes", bytes}});
  };
  Result<model::ModelDownload> got = model::FetchModelSource(p.model, p.tokenizer_file, o);
  if (!got.ok()) return got.status().WithContext("policy " + p.name);
  logger.Info("model downloaded", {{"policy", p.name},
                                   {"uri", p.model.uri},
                                   {"directory", got->directory},
                                   {"reused", got->reused},
                                   {"files", got->files},
                                   {"bytes", got->bytes}});
  return Status::Ok();
}

Result<std::shared_ptr<model::DecoderModel>> LoadWeights(const HostedPolicy& p) {
  Result<model::DecoderModel> m = p.model.builtin_uri.empty()
                                      ? model::DecoderModel::LoadHf(p.model.directory)
                                      : model::DecoderModel::FromBuiltin(p.model.builtin_uri);
  if (!m.ok()) return m.status().WithContext("policy " + p.name);
  return std::make_shared<model::DecoderModel>(std::move(*m));
}

}  // namespace

HostedPolicyLoad LoadHostedPolicies(const std::vector<HostedPolicy>& policies,
                                    EngineBackend* engine,
                                    std::shared_ptr<http::HostsFileResolver> resolver,
                                    const CancellationToken& cancel, log::Logger& logger) {
  HostedPolicyLoad out;
  auto fail = [&](std::string what, const HostedPolicy& p, Status s) {
    out.failure = HostedPolicyFailure{std::move(what), p.name, std::move(s)};
    return std::move(out);
  };
  for (const HostedPolicy& p : policies) {
    if (Status s = FetchPolicyModel(p, resolver, cancel, logger); !s.ok()) {
      return fail("cannot download a policy's model", p, s);
    }
    std::shared_ptr<model::DecoderModel> weights;
    if (engine != nullptr) {
      Result<std::shared_ptr<model::DecoderModel>> m = LoadWeights(p);
      if (!m.ok()) return fail("cannot load a policy", p, m.status());
      weights = std::move(*m);
    }
    Result<PolicyText> text =
        LoadPolicyText(p.name, p.tokenizer, p.tokenizer_file, p.chat_template);
    if (!text.ok()) return fail("cannot load a policy", p, text.status());
    if (engine != nullptr) {
      if (Status s = engine->engine().AddPolicy(p.name, weights, 0, text->tokenizer); !s.ok()) {
        return fail("cannot add a policy", p, s);
      }
    }
    logger.Info("policy loaded", {{"policy", p.name},
                                  {"tokenizer", p.tokenizer},
                                  {"chat_template", text->chat_template->name()}});
    out.texts.emplace(p.name, std::move(*text));
  }
  return out;
}

}  // namespace sluice::rollout
