#include "workers/trainer/master_address.h"

#include <arpa/inet.h>

#include "common/http/hosts_file.h"

namespace sluice::trainer {
namespace {

bool IsIpAddress(const std::string& host) {
  unsigned char buf[16];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

}  // namespace

Result<std::string> ResolveMasterAddress(const std::string& host, const std::string& hosts_file,
                                         std::chrono::milliseconds timeout,
                                         const CancellationToken& stop, Clock& clock,
                                         std::chrono::milliseconds poll) {
  if (hosts_file.empty() || IsIpAddress(host)) return host;
  http::HostsFileResolver resolver(hosts_file);  // Re-reads the file whenever it changes.
  const Clock::MonoTime deadline = clock.Now() + timeout;
  while (true) {
    if (std::optional<std::string> ip = resolver.Lookup(host)) return *ip;
    if (stop.IsCancelled()) return Status::Cancelled("stopped while looking up " + host);
    if (clock.Now() >= deadline) {
      return Status(
          StatusCode::kUnavailable,
          "flag --master-addr: " + host + " is not in the hosts file " + hosts_file + " after " +
              std::to_string(std::chrono::duration_cast<std::chrono::seconds>(timeout).count()) +
              " s (rank 0's pod has no address)",
          "master-addr");
    }
    clock.SleepFor(poll);
  }
}

}  // namespace sluice::trainer
