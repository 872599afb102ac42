// The head of an HTTP/1.1 response, parsed from its bytes: what bulk_exchange.h needs to read a
// body by itself (status, headers, how the body is framed). Pure functions; thread safe.
#pragma once

#include <httplib.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "common/status.h"

namespace sluice::http {

struct ResponseHead {
  int status = 0;            // 100..999.
  httplib::Headers headers;  // Names compared case-insensitively (httplib's multimap).
  // The body's length from Content-Length; nullopt when absent (the body then runs to the end
  // of the connection, or the status has no body: 1xx, 204, 304).
  std::optional<uint64_t> content_length;
  bool chunked = false;  // Transfer-Encoding ends with "chunked".
  // Whether the status carries no body whatever the headers say (1xx, 204, 304; RFC 9112 6.3).
  bool NoBody() const { return status < 200 || status == 204 || status == 304; }
};

// The offset just past the blank line that ends the head ("\r\n\r\n"; a bare "\n\n" too, as
// lenient clients accept), or nullopt while `bytes` holds no complete head yet.
std::optional<size_t> FindHeadEnd(std::string_view bytes);

// Parses `head`: the status line ("HTTP/1.x NNN reason") and header lines, up to and including
// the blank line. InvalidArgument, with what is wrong, for a malformed status line or header
// line, or a Content-Length that is not a decimal number or appears twice with different values.
Result<ResponseHead> ParseResponseHead(std::string_view head);

}  // namespace sluice::http
