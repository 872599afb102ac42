// The address of rank 0's rendezvous store (--master-addr), as the other ranks must dial it.
//
// On the local cluster a rank resolves pod names through the node agent's hosts file
// (SLUICE_HOSTS_FILE), which names rank 0 only once rank 0's pod has an IP. The ranks of a gang
// are created together, so a rank may look rank 0 up a moment before its entry is written. The
// name used to be looked up once and, missing, passed on as is: c10d's TCPStore then tried to
// resolve it through DNS, which knows no local-cluster names, until the collective timeout (120 s)
// failed the gang, and the operator restarted it once more (seen in the chaos soak: one rank kill
// cost two gang restarts and 125 s). So the lookup is repeated until the entry appears.
//
// Thread safety: a plain function; blocks the calling thread.
#pragma once

#include <chrono>
#include <string>

#include "common/clock.h"
#include "common/process/cancellation.h"
#include "common/status.h"

namespace sluice::trainer {

// `host` itself when it is an IP address or when `hosts_file` is empty (DNS resolves it).
// Otherwise the address `hosts_file` records for `host`, looked up every `poll` until it appears;
// Unavailable naming --master-addr and the file when it has not within `timeout` (by `clock`),
// Cancelled when `stop` is.
Result<std::string> ResolveMasterAddress(
    const std::string& host, const std::string& hosts_file, std::chrono::milliseconds timeout,
    const CancellationToken& stop, Clock& clock,
    std::chrono::milliseconds poll = std::chrono::milliseconds(100));

}  // namespace sluice::trainer
