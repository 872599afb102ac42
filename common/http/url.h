// Url: the parts of an absolute http(s) URL that the HTTP client needs.
//
// Parsing is strict and pure: "https://host:6443/base" -> {https, host, 6443, "/base"}. IPv6
// literals are written in brackets ("http://[::1]:8080"). Userinfo, fragments and queries are
// rejected for base URLs, because a client base URL with them is always a configuration mistake.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace sluice::http {

struct Url {
  std::string scheme;  // "http" or "https".
  std::string host;    // Without brackets for IPv6 literals.
  int port = 0;        // Explicit or the scheme's default (80, 443).
  std::string path;    // Path prefix without a trailing slash; "" for the root.

  bool tls() const { return scheme == "https"; }
  // "host:port", with brackets around IPv6 literals.
  std::string HostPort() const;
  // The URL back as text: "https://host:port/path".
  std::string ToString() const;
};

// Parses a base URL. Errors name the problem ("missing scheme", "port 70000 out of range").
Result<Url> ParseBaseUrl(std::string_view text);

// Percent-encodes a path segment or query value (RFC 3986 unreserved characters kept).
std::string PercentEncode(std::string_view text);

}  // namespace sluice::http
