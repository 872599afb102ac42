#include "workers/trainer/version_continuity.h"

namespace sluice::trainer {

int64_t ContinuedVersion(int64_t held, const std::optional<AnnouncedImage>& announced,
                         const std::string& held_digest) {
  if (!announced || announced->number < held) return held;
  if (announced->number == held && !held_digest.empty() && announced->digest == held_digest) {
    return held;
  }
  return announced->number + 1;
}

}  // namespace sluice::trainer
