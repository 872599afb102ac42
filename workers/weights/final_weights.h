// FinalWeights: the last weight version of each policy, kept by the dataflow after its trainer
// has finished.
//
// Trainer rank 0 serves every version it announces, and its pods are deleted once the run is over
// (docs/operator.md, TrainerJob). A rollout replica created after that (a scale-up, a replica
// re-created because its node failed) then has a source only while a ready peer holds the final
// version; when every replica of a pool is lost at once there is none, and the replacements never
// become ready. So rank 0 uploads its final version to the dataflow when its run ends, and the
// dataflow, which lives as long as the experiment, keeps it durably and serves it:
//
//   PUT /v1/final/<policy>/v1/weights/<version>   body: the safetensors image, with header
//                                                 X-Sluice-Weights-Digest: its digest
//       201 {"policy", "version", "digest", "bytes", "created": true}; 200 with "created": false
//       when that image is held already. 400: a malformed version, no digest, an image that does
//       not parse, is another version or does not have the digest. 404: a policy the dataflow
//       does not serve. 409: not the policy's newest announced version, or not its announced
//       digest (a version number never names two images). 503 until the dataflow has recovered.
//   PUT /v1/final/<policy>/v1/weights/<version>/parts/<offset>
//       body: bytes offset .. offset + n - 1 of the image, with the digest header and
//       X-Sluice-Weights-Size: the image's size in bytes. For an image larger than the body cap:
//       parts in order, offset 0 first (which starts the upload over). 202 {"received", "size"}
//       until the last part, then what the whole PUT answers. 409 for an offset other than the
//       bytes received so far (the message says how many), or a part of another upload; 400 for
//       a part past the size. A part received already (a retry) is answered without being
//       appended again.
//   GET /v1/final/<policy>/v1/weights...          weight_routes.h over the held version: the list,
//                                                 the full image (with Range), and 409 for deltas
//
// Rollout workers fetch from there when neither their relay nor the trainer serves an announced
// version (workers/rollout/weight_updater.h). A whole PUT larger than the dataflow server's request
// body cap (--max-body-bytes) is refused with 413 before it is read; DataflowClient then sends the
// image in parts.
//
// Durability: an accepted image is written to <dir>/<policy>.safetensors (WriteFileAtomic: file
// and directory synced) before the reply, and Load() reads the files back when the dataflow
// starts. The parts of an upload collect in <dir>/<policy>.upload; an upload a restart
// interrupted is dropped (Load removes the file) and the trainer, which got no answer, sends it
// again from offset 0. Memory: every held image, one per policy that uploaded one, and the image
// being checked when its last part arrives.
//
// Thread safety: every method may be called from any thread; uploads are serialized among
// themselves. `announced` is called on the server's worker threads.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/http/server.h"
#include "common/status.h"
#include "workers/weights/weight_routes.h"
#include "workers/weights/weight_store.h"

namespace sluice::weights {

// The image's size in bytes, on each part of a part upload.
inline constexpr std::string_view kWeightsSizeHeader = "X-Sluice-Weights-Size";

class FinalWeights {
 public:
  // A policy's newest announced version, as the dataflow holds it.
  struct Announced {
    int64_t version = 0;
    std::string digest;
  };
  // The newest announcement of a policy: nullopt when it has announced none, Unavailable while
  // the answer is not known yet (the dataflow is recovering).
  using AnnouncedLookup =
      std::function<Result<std::optional<Announced>>(const std::string& policy)>;

  // `dir` holds the images (created when missing); `policies` are the ones the dataflow serves.
  FinalWeights(std::string dir, const std::vector<std::string>& policies,
               AnnouncedLookup announced);
  ~FinalWeights();
  FinalWeights(const FinalWeights&) = delete;
  FinalWeights& operator=(const FinalWeights&) = delete;

  // Reads back the images in the directory and removes leftover temporary files of interrupted
  // writes. Errors name the file; the images that did load are kept.
  Status Load();

  // Accepts `image` as the final version `version` of `policy` (the checks of PUT above).
  // Returns true when it was stored now, false when that image was held already.
  Result<bool> Put(const std::string& policy, int64_t version, std::string_view digest,
                   std::string image);

  // What a part upload answers: the bytes received so far, and once the last part is in, whether
  // the image was stored now (Put's answer).
  struct PartProgress {
    uint64_t received = 0;
    uint64_t size = 0;
    std::optional<bool> created;  // Set when the upload is complete.
  };
  // Accepts bytes `offset` .. offset + part.size() - 1 of the `size`-byte image of `version` (the
  // PUT .../parts/<offset> above).
  Result<PartProgress> PutPart(const std::string& policy, int64_t version, std::string_view digest,
                               uint64_t size, uint64_t offset, std::string_view part);

  // The version held for `policy`; nullopt when none.
  std::optional<int64_t> Held(const std::string& policy) const;

  // The PUT and GET routes above. This object must outlive the server's handlers.
  void Register(http::Server& server);

  // "/v1/final/<policy>": the base path the weight routes of `policy` are served under.
  static std::string BasePath(std::string_view policy);

 private:
  struct PolicyImages;
  struct Upload {  // A part upload in progress.
    int64_t version = 0;
    std::string digest;
    uint64_t size = 0;
    uint64_t received = 0;
  };
  std::string PathOf(const std::string& policy) const;
  std::string UploadPathOf(const std::string& policy) const;
  // Put's checks of the policy, the digest and the announcement.
  Result<PolicyImages*> CheckUpload(const std::string& policy, int64_t version,
                                    std::string_view digest);
  // Parses, checks, writes and publishes `image`; put_mu_ held.
  Result<bool> StoreLocked(PolicyImages& images, const std::string& policy, int64_t version,
                           std::string_view digest, std::string image);

  const std::string dir_;
  const AnnouncedLookup announced_;
  std::map<std::string, std::unique_ptr<PolicyImages>> policies_;
  std::mutex put_mu_;                      // Serializes uploads.
  std::map<std::string, Upload> uploads_;  // By policy; guarded by put_mu_.
};

}  // namespace sluice::weights
