#include "common/http/url.h"

#include <charconv>

namespace sluice::http {

std::string Url::HostPort() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::string Url::ToString() const { return scheme + "://" + HostPort() + path; }

Result<Url> ParseBaseUrl(std::string_view text) {
  Url url;
  const size_t sep = text.find("://");
  if (sep == std::string_view::npos) {
    return Status::InvalidArgument("URL \"" + std::string(text) +
                                   "\" has no scheme (expected http:// or https://)");
  }
  url.scheme = std::string(text.substr(0, sep));
  if (url.scheme != "http" && url.scheme != "https") {
    return Status::InvalidArgument("URL \"" + std::string(text) + "\" has scheme \"" + url.scheme +
                                   "\" (expected http or https)");
  }
  std::string_view rest = text.substr(sep + 3);
  const size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? "" : rest.substr(slash);
  if (authority.find('@') != std::string_view::npos) {
    return Status::InvalidArgument("URL \"" + std::string(text) +
                                   "\" has user information; pass credentials separately");
  }
  if (path.find_first_of("?#") != std::string_view::npos) {
    return Status::InvalidArgument("URL \"" + std::string(text) +
                                   "\" has a query or fragment; a base URL takes neither");
  }
  std::string_view port_text;
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) {
      return Status::InvalidArgument("URL \"" + std::string(text) +
                                     "\" has an unterminated IPv6 literal");
    }
    url.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') {
        return Status::InvalidArgument("URL \"" + std::string(text) +
                                       "\" has junk after the IPv6 literal");
      }
      port_text = after.substr(1);
    }
  } else {
    const size_t colon = authority.rfind(':');
    if (colon != std::string_view::npos) {
      url.host = std::string(authority.substr(0, colon));
      port_text = authority.substr(colon + 1);
    } else {
      url.host = std::string(authority);
    }
  }
  if (url.host.empty()) {
    return Status::InvalidArgument("URL \"" + std::string(text) + "\" has no host");
  }
  if (!port_text.empty()) {
    int port = 0;
    auto [ptr, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (ec != std::errc() || ptr != port_text.data() + port_text.size() || port < 1 ||
        port > 65535) {
      return Status::InvalidArgument("URL \"" + std::string(text) + "\" has port \"" +
                                     std::string(port_text) + "\" (expected 1..65535)");
    }
    url.port = port;
  } else {
    url.port = url.tls() ? 443 : 80;
  }
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  url.path = std::string(path);
  return url;
}

std::string PercentEncode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    const bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                            (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~';
    if (unreserved) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

}  // namespace sluice::http
