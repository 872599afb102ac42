// TrainerSettings: what one sluice-trainer rank needs to know about its job, read from the
// trainer.json the operator mounts (docs/operator.md, "TrainerJob"): the TrainerJob, its Policy
// and its Dataflow, each as {apiVersion, kind, metadata{name, namespace}, spec}. Specs are
// defaulted and validated against the CRD schemas exactly as the API server would, so a hand-made
// file gets the same field-naming errors as kubectl apply.
//
// Thread safety: plain values and pure functions (FetchModelSource does I/O, thread-safe).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "api/generated/dataflow_types.h"
#include "api/generated/policy_types.h"
#include "api/generated/trainer_job_types.h"
#include "common/status.h"
#include "workers/model/model_download.h"

namespace sluice::trainer {

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
// http:// or https:// URL, model::CheckModelUri) keeps the URL and names its cache entry
// model::ModelCacheDir(model_cache_root, uri) as the directory, nothing downloaded yet; an empty
// `model_cache_root` is model::DefaultModelCacheRoot() ($TMPDIR/sluice-models). InvalidArgument
// naming the field for another uri, and for pvc with an empty `policy` ("metadata.name").
Result<ModelSource> ResolveModelSource(std::string_view policy,
                                       const api::PolicySpecModelSource& source,
                                       std::string_view model_cache_root = {});

// Downloads a uri source into its directory (model::DownloadModelDirectory; a complete cache
// entry is reused without a request), after which it loads exactly like a path source; does
// nothing for the other sources. `tokenizer_file` (TextSettings::tokenizer_file, may be empty) is
// fetched too when it lies inside the directory (spec.tokenizer.path). Blocks for the whole
// transfer; options.cancel stops it. Errors: DownloadModelDirectory's (a missing required file
// is InvalidArgument naming "spec.model.source.uri" and the URL).
Result<model::ModelDownload> FetchModelSource(const ModelSource& source,
                                              std::string_view tokenizer_file,
                                              model::ModelDownloadOptions options = {});

// How the Policy's text is tokenized and rendered (spec.tokenizer), resolved as the rollout
// workers resolve it, so a trainer that renders prompts itself (the warm start) produces exactly
// the tokens the rollout workers sample after.
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

// The shape of the warm start's supervised transcripts (docs/trainer.md, "Warm start"), from the
// Dataflow's workflow and the role this trainer's Policy plays in it.
enum class WarmStartTranscript {
  // single-turn, and the solver of solve-and-verify (its first turn is rendered like a
  // single-turn prompt): the prompt, then the reference answer (warm_start.h).
  kAnswer,
  // The verifier of solve-and-verify: the solver's prompt, a candidate answer, the verify
  // instruction, then the verdict (verifier_warm_start.h).
  kVerdict,
  // multi-turn with the built-in calculator: the prompt, a calculator call, its value, then the
  // reference answer (calculator_warm_start.h).
  kCalculatorCall,
};

struct TrainerSettings {
  std::string job;       // TrainerJob metadata.name.
  std::string nspace;    // Its namespace.
  std::string policy;    // The Policy's name: the dataflow's policy id (/v1/batches/{policy}).
  std::string dataflow;  // The Dataflow's name.
  api::TrainerJobSpec spec;
  api::PolicySpec policy_spec;
  ModelSource model;
  // From the Dataflow: optimizer updates per batch (spec.batch.perPolicy[policy].minibatches,
  // else spec.batch.minibatches), and the completion limit (spec.sampling.maxNewTokens, tokens)
  // that DAPO's overlong shaping measures against.
  int64_t minibatches = 1;
  int64_t max_new_tokens = 512;
  // Set with spec.warmStart: how prompts are rendered, the Dataflow's spec.workflow.systemPrompt,
  // the transcript shape, the role the Policy plays (spec.workflow.roles[].name), and the
  // workflow's tool-call and answer markers (spec.workflow.toolCall, defaulted when unset), which
  // frame the calculator call, the final answer and the verifier's verdict.
  TextSettings text;
  std::optional<std::string> system_prompt;
  WarmStartTranscript warm_start_transcript = WarmStartTranscript::kAnswer;
  std::string warm_start_role;
  api::DataflowSpecWorkflowToolCall tool_call;
};

// Parses trainer.json text. InvalidArgument naming the field ("trainerJob.spec.steps", ...) for
// a missing object, a schema violation or an unsupported model source, and naming
// "trainerJob.spec.warmStart" for a warm start the Dataflow's workflow cannot have: a workflow
// other than single-turn, solve-and-verify and multi-turn; a solve-and-verify Policy that plays
// no role, both roles, or a role other than solver and verifier; a multi-turn environment other
// than the built-in calculator, or maxTurns below 2 (the transcript has two turns).
// `model_cache_root`: as ResolveModelSource's (--model-cache-dir).
Result<TrainerSettings> ParseTrainerConfig(std::string_view text,
                                           std::string_view model_cache_root = {});
// Reads and parses the file; errors carry the path.
Result<TrainerSettings> LoadTrainerConfigFile(const std::string& path,
                                              std::string_view model_cache_root = {});

}  // namespace sluice::trainer
