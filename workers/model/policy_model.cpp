#include "workers/model/policy_model.h"

#include <filesystem>
#include <utility>

namespace sluice::model {

std::string PolicyModelDir(std::string_view policy) {
  return std::string(kPolicyModelMount) + "/" + std::string(policy);
}

Result<ModelSource> ResolveModelSource(std::string_view policy,
                                       const api::PolicySpecModelSource& source,
                                       std::string_view model_cache_root) {
  ModelSource out;
  if (source.builtin) {
    const api::PolicySpecModelSourceBuiltin& b = *source.builtin;
    out.builtin_uri = "builtin:tiny?layers=" + std::to_string(b.layers) +
                      "&d=" + std::to_string(b.hidden_size) + "&heads=" + std::to_string(b.heads) +
                      "&kv_heads=" + std::to_string(b.kv_heads) +
                      "&ff=" + std::to_string(b.intermediate_size) +
                      "&max_pos=" + std::to_string(b.max_sequence_length) +
                      "&seed=" + std::to_string(b.seed) + "&vocab=char";
    return out;
  }
  if (source.path) {
    out.directory = *source.path;
    return out;
  }
  if (source.pvc) {
    if (policy.empty()) {
      return Status::InvalidArgument("is needed to find the Policy's model claim mount",
                                     "metadata.name");
    }
    std::string dir = PolicyModelDir(policy);
    if (source.pvc->path != "/") dir += source.pvc->path;
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    out.directory = dir;
    return out;
  }
  if (source.uri) {
    SLUICE_RETURN_IF_ERROR(CheckModelUri(*source.uri));
    out.uri = *source.uri;
    const std::string root =
        model_cache_root.empty() ? DefaultModelCacheRoot() : std::string(model_cache_root);
    out.directory = ModelCacheDir(root, out.uri);
    return out;
  }
  return Status::InvalidArgument("must set one of builtin, path, pvc and uri", "spec.model.source");
}

Result<ModelDownload> FetchModelSource(const ModelSource& source, std::string_view tokenizer_file,
                                       ModelDownloadOptions options) {
  if (source.uri.empty()) {
    ModelDownload none;
    none.directory = source.directory;
    return none;
  }
  if (!tokenizer_file.empty()) {
    const std::string relative =
        std::filesystem::path(tokenizer_file).lexically_relative(source.directory).generic_string();
    if (!relative.empty() && relative != "." && !relative.starts_with("..")) {
      options.extra_files.push_back(relative);
    }
  }
  return DownloadModelDirectory(source.uri, source.directory, options);
}

Result<TextSettings> ResolveTextSettings(const ModelSource& model,
                                         const api::PolicySpecTokenizer& tok) {
  TextSettings out;
  out.tokenizer = tok.type == "auto" ? (model.builtin_uri.empty() ? "model" : "char") : tok.type;
  if (out.tokenizer == "char") {
    if (tok.chat_template == "chatml") {
      return Status::InvalidArgument(
          "chatml needs a model tokenizer (the char tokenizer has the plain template's markers "
          "only)",
          "spec.tokenizer.chatTemplate");
    }
    out.chat_template = "plain";
  } else {
    out.tokenizer_file =
        model.directory + "/" + (tok.path.has_value() ? *tok.path : "tokenizer.json");
    out.chat_template = tok.chat_template;
  }
  if (out.chat_template == "none") {
    return Status::InvalidArgument(
        "none is not supported by the rollout worker's workflows yet (they build chat "
        "conversations); use auto or chatml",
        "spec.tokenizer.chatTemplate");
  }
  return out;
}

}  // namespace sluice::model
