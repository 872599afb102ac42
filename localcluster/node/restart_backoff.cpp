#include "localcluster/node/restart_backoff.h"

namespace sluice::node {

namespace {
constexpr int kMaxExponent = 30;  // 2^29 times any base is past any sensible cap.
}  // namespace

std::chrono::milliseconds RestartDelay(int exponent, std::chrono::milliseconds base,
                                       std::chrono::milliseconds max) {
  if (exponent <= 0) return std::chrono::milliseconds(0);
  std::chrono::milliseconds delay = base;
  for (int i = 1; i < exponent && delay < max; ++i) delay *= 2;
  return delay < max ? delay : max;
}

bool ShouldRestart(const std::string& restart_policy, int exit_code) {
  if (restart_policy == "Never") return false;
  if (restart_policy == "OnFailure") return exit_code != 0;
  return true;  // "Always", and the default when unset.
}

int BackoffExponentAfterRun(int previous, std::chrono::seconds ran) {
  if (previous < 0 || ran >= kBackoffResetAfter) return 0;
  return previous >= kMaxExponent ? kMaxExponent : previous + 1;
}

}  // namespace sluice::node
