// WeightDigest: the SHA-256 digest that names a published weight version, "sha256:<64 hex>".
//
// Publisher and fetcher must agree on it byte for byte, so it is computed over the complete
// safetensors file image exactly as served (header and data), never over tensors one by one.
// Incremental so a fetcher can hash a download as it streams, and hash a partial file it resumes.
//
// Ownership: a WeightDigest owns its OpenSSL context and frees it on destruction. Thread safety:
// none; one thread per object. The free function is thread-safe. Sizes are in bytes.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace sluice::weights {

// The prefix every digest carries, so a future algorithm can be told apart.
inline constexpr std::string_view kDigestPrefix = "sha256:";

class WeightDigest {
 public:
  WeightDigest();
  ~WeightDigest();
  WeightDigest(const WeightDigest&) = delete;
  WeightDigest& operator=(const WeightDigest&) = delete;

  void Update(std::string_view bytes);
  // Forgets everything updated so far (a download that starts over).
  void Reset();
  // "sha256:<lowercase hex>" of everything updated so far. Call Reset before reusing the object.
  std::string Finish();

 private:
  struct Context;
  Context* ctx_;
};

// "sha256:<hex>" of bytes.
std::string DigestOf(std::string_view bytes);

// OK when `digest` has the form "sha256:" followed by 64 lowercase hex digits; InvalidArgument
// naming `field` otherwise. Used on digests that arrive from peers before they are compared.
Status CheckDigestSyntax(std::string_view digest, std::string_view field);

}  // namespace sluice::weights
