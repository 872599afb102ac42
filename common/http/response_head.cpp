#include "common/http/response_head.h"

#include <cctype>
#include <charconv>
#include <string>
#include <system_error>

namespace sluice::http {
namespace {

std::string_view TrimSpaces(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

Status Malformed(const std::string& what) {
  return Status::InvalidArgument("malformed HTTP response head: " + what);
}

}  // namespace

std::optional<size_t> FindHeadEnd(std::string_view bytes) {
  const size_t crlf = bytes.find("\r\n\r\n");
  const size_t lf = bytes.find("\n\n");
  if (crlf == std::string_view::npos && lf == std::string_view::npos) return std::nullopt;
  if (lf == std::string_view::npos || (crlf != std::string_view::npos && crlf < lf)) {
    return crlf + 4;
  }
  return lf + 2;
}

Result<ResponseHead> ParseResponseHead(std::string_view head) {
  ResponseHead out;
  size_t eol = head.find('\n');
  if (eol == std::string_view::npos) return Malformed("no status line");
  const std::string_view status_line = TrimSpaces(head.substr(0, eol));
  // "HTTP/1.1 200 OK": a version, a space, three digits, then an optional reason.
  if (status_line.size() < 12 || status_line.substr(0, 7) != "HTTP/1." ||
      !std::isdigit(static_cast<unsigned char>(status_line[7])) || status_line[8] != ' ' ||
      (status_line.size() > 12 && status_line[12] != ' ')) {
    return Malformed("status line \"" + std::string(status_line.substr(0, 64)) + "\"");
  }
  const std::string_view code = status_line.substr(9, 3);
  const auto [end, ec] = std::from_chars(code.data(), code.data() + code.size(), out.status);
  if (ec != std::errc() || end != code.data() + code.size() || out.status < 100) {
    return Malformed("status code \"" + std::string(code) + "\"");
  }
  size_t at = eol + 1;
  while (at < head.size()) {
    eol = head.find('\n', at);
    if (eol == std::string_view::npos) eol = head.size();
    const std::string_view line = TrimSpaces(head.substr(at, eol - at));
    at = eol + 1;
    if (line.empty()) break;  // The blank line: the end of the head.
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) {
      return Malformed("header line \"" + std::string(line.substr(0, 64)) + "\"");
    }
    const std::string_view name = line.substr(0, colon);
    const std::string_view value = TrimSpaces(line.substr(colon + 1));
    if (EqualsIgnoreCase(name, "Content-Length")) {
      uint64_t length = 0;
      const auto [p, e] = std::from_chars(value.data(), value.data() + value.size(), length);
      if (e != std::errc() || p != value.data() + value.size() || value.empty()) {
        return Malformed("Content-Length \"" + std::string(value.substr(0, 32)) + "\"");
      }
      if (out.content_length && *out.content_length != length) {
        return Malformed("two different Content-Length values");
      }
      out.content_length = length;
    } else if (EqualsIgnoreCase(name, "Transfer-Encoding")) {
      const size_t comma = value.rfind(',');
      const std::string_view last =
          TrimSpaces(comma == std::string_view::npos ? value : value.substr(comma + 1));
      out.chunked = EqualsIgnoreCase(last, "chunked");
    }
    out.headers.emplace(std::string(name), std::string(value));
  }
  return out;
}

}  // namespace sluice::http
