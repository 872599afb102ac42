// Bearer tokens: where they come from and how a server checks them.
//
// Every Sluice component authenticates its peers with a shared token from a Kubernetes Secret,
// mounted as a file or passed in an environment variable (main() reads the variable; nothing
// below main does). A file-backed source re-reads the file when it changes, because kubelets
// update mounted Secrets and projected service-account tokens in place when they rotate.
//
// Thread safety: TokenSource::Get and TokensEqual may be called from any thread.
#pragma once

#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace sluice::http {

class TokenSource {
 public:
  // A fixed token (from a flag or an environment variable). Surrounding whitespace is trimmed.
  static std::shared_ptr<TokenSource> FromValue(std::string token);
  // A token file, read now (errors if missing or empty) and again whenever it changes.
  static Result<std::shared_ptr<TokenSource>> FromFile(std::filesystem::path path);

  // The current token. Keeps returning the last good token if a rotated file is briefly
  // unreadable or empty (a rotation is a write, not an outage).
  std::string Get();

 private:
  TokenSource() = default;
  Status ReloadLocked();

  std::mutex mu_;
  std::string token_;
  std::optional<std::filesystem::path> path_;
  std::filesystem::file_time_type mtime_{};
};

// Compares two secrets in time that does not depend on where they differ, or on their lengths
// (both are hashed with SHA-256 first), so response timing leaks nothing about the token.
bool TokensEqual(std::string_view a, std::string_view b);

// Extracts the token from an "Authorization: Bearer <token>" header value; nullopt when the
// header is absent, uses another scheme, or carries an empty token. The scheme is
// case-insensitive (RFC 7235).
std::optional<std::string_view> ParseBearerHeader(std::string_view header_value);

}  // namespace sluice::http
