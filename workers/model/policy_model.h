// A Policy's model as a worker process sees it: where its initial weights come from
// (spec.model.source, resolved to something a process can open, and fetched when it is a URL) and
// how its text is tokenized and rendered (spec.tokenizer). The trainer and the rollout workers
// resolve both the same way, so a trainer that renders prompts itself (the warm start) produces
// exactly the tokens the rollout workers sample.
//
// Thread safety: plain values and pure functions (FetchModelSource does I/O, thread-safe).
#pragma once

#include <string>
#include <string_view>

#include "api/generated/policy_types.h"
#include "common/status.h"
#include "workers/model/model_download.h"

namespace sluice::model {

// Where the Policy's initial weights come from, resolved to something a process can open.
struct ModelSource {
  std::string builtin_uri;  // "builtin:tiny?layers=..." (ParseBuiltinModel); or
  std::string directory;    // an HF model directory (for uri: its cache entry, ModelCacheDir).
  // spec.model.source.uri, the http(s) URL of an HF model directory that FetchModelSource
  // downloads into `directory` before the model is loaded; empty for the other sources.
  std::string uri;
};

// Where the operator mounts Policies' spec.model.source.pvc claims inside worker Pods: each
// Policy's claim at PolicyModelDir(<policy name>) = kPolicyModelMount + "/" + <policy name>
// (operator/controllers/policy_model_volumes.h keeps the same rule), so one Pod can host Policies
// on several claims; the model directory is that plus the claim's path.
inline constexpr std::string_view kPolicyModelMount = "/var/lib/sluice/model";

// kPolicyModelMount + "/" + `policy`.
std::string PolicyModelDir(std::string_view policy);

// Maps spec.model.source of the Policy named `policy` onto a ModelSource. builtin becomes the
// equivalent builtin:tiny URI (char vocabulary, llama family, max_pos = maxSequenceLength); path
// is used as it is; pvc is PolicyModelDir(policy) + its path (without a trailing '/'); uri (an
// http:// or https:// URL, CheckModelUri) keeps the URL and names its cache entry
// ModelCacheDir(model_cache_root, uri) as the directory, nothing downloaded yet; an empty
// `model_cache_root` is DefaultModelCacheRoot() ($TMPDIR/sluice-models). InvalidArgument
// naming the field for another uri, and for pvc with an empty `policy` ("metadata.name").
Result<ModelSource> ResolveModelSource(std::string_view policy,
                                       const api::PolicySpecModelSource& source,
                                       std::string_view model_cache_root = {});

// Downloads a uri source into its directory (DownloadModelDirectory; a complete cache
// entry is reused without a request), after which it loads exactly like a path source; does
// nothing for the other sources. `tokenizer_file` (TextSettings::tokenizer_file, may be empty) is
// fetched too when it lies inside the directory (spec.tokenizer.path). Blocks for the whole
// transfer; options.cancel stops it. Errors: DownloadModelDirectory's (a missing required file
// is InvalidArgument naming "spec.model.source.uri" and the URL).
Result<ModelDownload> FetchModelSource(const ModelSource& source, std::string_view tokenizer_file,
                                       ModelDownloadOptions options = {});

// How the Policy's text is tokenized and rendered (spec.tokenizer).
struct TextSettings {
  std::string tokenizer;       // "char" (built-in models) or "model" (the model's tokenizer.json).
  std::string tokenizer_file;  // For "model": the tokenizer.json path.
  // The ChatTemplate name (model/chat_template.h): "plain" with the char tokenizer; "auto" (picked
  // from the tokenizer's markers when it is read), "chatml" or "llama3" with a model tokenizer.
  std::string chat_template;
};

// spec.tokenizer of a Policy whose weights come from `model`. InvalidArgument naming
// "spec.tokenizer.chatTemplate" for chatml with the char tokenizer (it has only the plain
// template's markers) and for none (the workflows build chat conversations).
Result<TextSettings> ResolveTextSettings(const ModelSource& model,
                                         const api::PolicySpecTokenizer& tokenizer);

}  // namespace sluice::model
