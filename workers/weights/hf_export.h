// HfExport: writes a held weight version as a Hugging Face model directory, for evaluation or
// serving outside Sluice (transformers' from_pretrained, vLLM, ...).
//
//   <dir>/config.json          model::ToHfConfig(config), "torch_dtype" the snapshot's dtype
//   <dir>/model.safetensors    the snapshot's image byte for byte (its metadata carries
//                              "format": "pt" and "sluice.version"); rewritten with the same
//                              tensors only when the image lacks "format": "pt", which
//                              transformers requires
//   <dir>/<extra files>        tokenizer.json, tokenizer_config.json, ... copied from the
//                              Policy's source directory (HfSidecarFiles)
//   <dir>/sluice_export.json   {"version", "digest" (the snapshot's), "modelDigest" (of
//                              model.safetensors as written), "policy" (when given)}
//
// Like DecoderModel::SaveHf, a tied lm_head is not written (transformers ties it on load).
//
// The directory appears atomically: everything is written into a temporary sibling
// (`.<name>.tmp-<pid>-<n>`), each file and the directory are fsynced, and the temporary is
// renamed to `dir` without replacing anything; the parent is fsynced after. So `dir` is either
// absent or complete, and an export already there is never clobbered. A crash leaves at most a
// temporary sibling, which nothing reads.
//
// Thread safety: the functions are thread-safe; concurrent exports of the same version to the
// same `dir` both succeed (the second finds the first's directory), of different content to the
// same `dir` one wins and the other gets AlreadyExists. Sizes are in bytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "workers/model/model_config.h"
#include "workers/weights/weight_snapshot.h"

namespace sluice::weights {

inline constexpr std::string_view kHfExportRecordFile = "sluice_export.json";

struct HfExportOptions {
  // Files copied into the directory under their own file names (not directories). Their names
  // must be distinct and must not be one of the files the export writes itself.
  std::vector<std::string> extra_files;
  // Recorded in sluice_export.json when non-empty.
  std::string policy;
};

// What an export produced (or found).
struct HfExport {
  std::string path;  // The directory.
  int64_t version = 0;
  std::string digest;    // The snapshot's digest.
  uint64_t bytes = 0;    // Sum of the sizes of the directory's files.
  bool created = false;  // False when an export of the same version was already there.
};

// Writes `snapshot` as an HF model directory `dir` (see above); the parent is created if needed.
//
// When `dir` exists and its sluice_export.json records the same version and digest it is
// returned unchanged (created false). Errors:
//   AlreadyExists naming `dir` when it exists with anything else in it;
//   NotFound naming the path of a missing extra file (checked before anything is written);
//   InvalidArgument, with field(), for an extra file name that collides ("extra_files"), a
//   config that fails ValidateModelConfig, tensors not all of one float dtype
//   ("tensors.<name>.dtype"), or weights that do not match the config
//   ("tensors.model.embed_tokens.weight.shape", "tensors.lm_head.weight");
//   Internal for a filesystem failure, naming the path.
// On any error nothing is left behind: neither `dir` nor the temporary sibling.
Result<HfExport> ExportHfDirectory(const WeightSnapshot& snapshot, const model::ModelConfig& config,
                                   const HfExportOptions& options, const std::string& dir);

// The files of an HF model directory that belong with exported weights, as paths under
// `model_dir`, sorted: tokenizer*.json, tokenizer.model, special_tokens_map.json,
// added_tokens.json, vocab.json, vocab.txt, merges.txt, generation_config.json,
// chat_template.jinja, chat_template.json; whichever exist as regular files. NotFound when
// `model_dir` is not a directory.
Result<std::vector<std::string>> HfSidecarFiles(const std::string& model_dir);

// "<policy>-v<version>": the directory name of a policy's export of a version.
std::string HfExportName(std::string_view policy, int64_t version);

// The HF spelling of a float dtype: "float32", "float16", "bfloat16"; empty for other dtypes.
std::string_view HfDtypeName(model::DType dtype);

}  // namespace sluice::weights
