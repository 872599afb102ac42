// BulkExchange: one HTTP/1.1 request and response on a fresh plain-TCP connection, reading the
// body with large reads straight into memory. Client::Send uses it for requests marked
// Request::bulk_body (a trainer's 35 MB batch) over http://.
//
// Why: cpp-httplib 0.11 (Debian's prebuilt library) reads a body 4 KiB at a time with a poll()
// before each read: two system calls per 4 KiB, 17,000 for one 35 MB batch, which made a batch GET
// 5 to 15x slower than the same work in process on this project's VMs (docs/benchmarks.md,
// "Dataflow service over HTTP"). Here each read asks for everything still missing, so the kernel
// hands over whatever the socket holds (hundreds of KiB on loopback), and a poll() happens only
// when nothing is there yet. The body's memory is sized from Content-Length and made ready 2 MiB
// at a time just ahead of the reads, so its page faults overlap the server's sending.
//
// Scope: the request is sent with "Connection: close" and the connection is not reused (one
// connect per bulk response is nothing next to its size). The body is framed by Content-Length,
// or runs to the end of the connection; a chunked response is refused as kMalformed (Sluice's
// servers frame every reply by length). No TLS: Client sends https requests through cpp-httplib.
//
// Thread safety: a pure function of its arguments and the network; call from any thread.
#pragma once

#include <httplib.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "common/process/cancellation.h"

namespace sluice::http {

struct BulkExchangeOptions {
  std::string address;  // Numeric IPv4 or IPv6 address to connect to.
  int port = 0;
  std::chrono::milliseconds connect_timeout{5000};
  std::chrono::milliseconds read_timeout{30000};   // Per wait for the next bytes.
  std::chrono::milliseconds write_timeout{30000};  // Per wait for room to send.
  size_t max_response_bytes = size_t{1} << 30;     // Of the body; larger: kTooLarge.
};

enum class BulkFailure {
  kNone,            // A whole response arrived.
  kConnect,         // The connection could not be opened (refused, unreachable, bad address).
  kConnectTimeout,  // Nor within connect_timeout.
  kWrite,           // The request could not be sent (reset, write_timeout).
  kRead,            // The connection failed or closed before the whole response arrived.
  kReadTimeout,     // No byte for read_timeout.
  kTooLarge,        // The body is over max_response_bytes (by Content-Length or as it came).
  kMalformed,       // The response is not HTTP/1.x this reader understands (or is chunked).
  kCancelled,       // `cancel` fired.
};

struct BulkExchangeResult {
  BulkFailure failure = BulkFailure::kNone;
  std::string message;    // What went wrong, in words; empty on success.
  bool got_head = false;  // The response head arrived (a failure after it is not retryable).
  int status = 0;         // With the head.
  httplib::Headers headers;
  std::string body;  // The whole body on success.
};

// Sends `request` (the complete request bytes: request line, headers including
// "Connection: close", blank line, body) and reads the response. Cancellation shuts the
// socket down, so a blocked wait ends at once.
BulkExchangeResult BulkExchange(const BulkExchangeOptions& options, std::string_view request,
                                const std::optional<CancellationToken>& cancel);

}  // namespace sluice::http
