#include "localcluster/apiserver/storage.h"

#include <array>
#include <string>
#include <utility>

namespace sluice::apiserver {
namespace {

constexpr std::string_view kBase64Url =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

std::string Base64UrlEncode(std::string_view in) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  uint32_t acc = 0;
  int bits = 0;
  for (unsigned char c : in) {
    acc = (acc << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out.push_back(kBase64Url[(acc >> bits) & 0x3F]);
    }
  }
  if (bits > 0) out.push_back(kBase64Url[(acc << (6 - bits)) & 0x3F]);
  return out;
}

std::optional<std::string> Base64UrlDecode(std::string_view in) {
  std::array<int, 256> value;
  value.fill(-1);
  for (size_t i = 0; i < kBase64Url.size(); ++i) {
    value[static_cast<unsigned char>(kBase64Url[i])] = static_cast<int>(i);
  }
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (unsigned char c : in) {
    if (value[c] < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<uint32_t>(value[c]);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  return out;
}

Status InvalidContinue(std::string_view why) {
  return Status::InvalidArgument("continue key is not valid: " + std::string(why), "continue");
}

}  // namespace

std::string ObjectKey::ToString() const {
  if (ns.empty()) return resource + "/" + name;
  return resource + "/" + ns + "/" + name;
}

std::string_view WatchEventTypeName(WatchEventType type) {
  switch (type) {
    case WatchEventType::kAdded:
      return "ADDED";
    case WatchEventType::kModified:
      return "MODIFIED";
    case WatchEventType::kDeleted:
      return "DELETED";
  }
  return "UNKNOWN";
}

Result<Stored> Storage::GuaranteedUpdate(const ObjectKey& key, const UpdateFn& fn) {
  for (int attempt = 0; attempt < kGuaranteedUpdateAttempts; ++attempt) {
    SLUICE_ASSIGN_OR_RETURN(Stored current, Get(key));
    SLUICE_ASSIGN_OR_RETURN(nlohmann::json updated, fn(current.object));
    // fn sees resourceVersion set; a no-op is judged with it restored to the stored value.
    SLUICE_RETURN_IF_ERROR(storage_internal::StampRevision(updated, current.revision));
    if (updated == current.object) return current;
    Result<Stored> written = Update(key, std::move(updated), current.revision);
    if (written.ok() || written.status().code() != StatusCode::kConflict) return written;
  }
  return storage_internal::UpdateConflictError(key);
}

namespace storage_internal {

std::string QualifiedResource(std::string_view resource) {
  const size_t slash = resource.find('/');
  if (slash == std::string_view::npos) return std::string(resource);
  const std::string_view group = resource.substr(0, slash);
  const std::string_view plural = resource.substr(slash + 1);
  if (group == "core" || group.empty()) return std::string(plural);
  return std::string(plural) + "." + std::string(group);
}

Status ValidateKey(const ObjectKey& key) {
  if (key.resource.empty()) return Status::InvalidArgument("resource must be set", "resource");
  if (key.name.empty()) return Status::InvalidArgument("name must be set", "metadata.name");
  // Keys end up in JSON (continue tokens, stored documents), which must be valid UTF-8.
  try {
    (void)nlohmann::json::array({key.resource, key.ns, key.name}).dump();
  } catch (const nlohmann::json::exception&) {
    return Status::InvalidArgument("resource, namespace and name must be valid UTF-8");
  }
  return Status::Ok();
}

Status StampRevision(nlohmann::json& object, uint64_t revision) {
  if (!object.is_object()) return Status::InvalidArgument("object must be a JSON object");
  nlohmann::json& metadata = object["metadata"];
  if (metadata.is_null()) metadata = nlohmann::json::object();
  if (!metadata.is_object()) {
    return Status::InvalidArgument("metadata must be a JSON object", "metadata");
  }
  metadata["resourceVersion"] = std::to_string(revision);
  return Status::Ok();
}

Status NotFoundError(const ObjectKey& key) {
  return Status::NotFound(QualifiedResource(key.resource) + " \"" + key.name + "\" not found");
}

Status AlreadyExistsError(const ObjectKey& key) {
  return Status::AlreadyExists(QualifiedResource(key.resource) + " \"" + key.name +
                               "\" already exists");
}

Status UpdateConflictError(const ObjectKey& key) {
  return Status::Conflict("Operation cannot be fulfilled on " + QualifiedResource(key.resource) +
                          " \"" + key.name +
                          "\": the object has been modified; please apply your changes to the "
                          "latest version and try again");
}

Status DeleteConflictError(const ObjectKey& key, uint64_t expected, uint64_t actual) {
  return Status::Conflict("Operation cannot be fulfilled on " + QualifiedResource(key.resource) +
                          " \"" + key.name + "\": the ResourceVersion in the precondition (" +
                          std::to_string(expected) +
                          ") does not match the ResourceVersion in record (" +
                          std::to_string(actual) + "). The object might have been modified");
}

std::string EncodeContinue(const std::string& resource, const std::optional<std::string>& ns,
                           const ContinuePosition& position) {
  nlohmann::json doc = {
      {"v", 1},
      {"r", resource},
      {"rv", position.list_revision},
      {"ns", position.last_ns},
      {"name", position.last_name},
  };
  if (ns.has_value()) doc["scope"] = *ns;
  return Base64UrlEncode(doc.dump());
}

Result<ContinuePosition> DecodeContinue(const std::string& token, const std::string& resource,
                                        const std::optional<std::string>& ns) {
  std::optional<std::string> text = Base64UrlDecode(token);
  if (!text.has_value()) return InvalidContinue("not base64url");
  nlohmann::json doc = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return InvalidContinue("not a JSON object");
  const auto v = doc.find("v");
  const auto r = doc.find("r");
  const auto rv = doc.find("rv");
  const auto last_ns = doc.find("ns");
  const auto last_name = doc.find("name");
  if (v == doc.end() || *v != 1) return InvalidContinue("unknown version");
  if (r == doc.end() || !r->is_string() || rv == doc.end() || !rv->is_number_unsigned() ||
      last_ns == doc.end() || !last_ns->is_string() || last_name == doc.end() ||
      !last_name->is_string()) {
    return InvalidContinue("missing fields");
  }
  if (r->get<std::string>() != resource) return InvalidContinue("made for another resource");
  const auto scope = doc.find("scope");
  const bool scoped = scope != doc.end();
  if (scoped != ns.has_value() || (scoped && (!scope->is_string() || *scope != *ns))) {
    return InvalidContinue("made for another namespace");
  }
  ContinuePosition position;
  position.list_revision = rv->get<uint64_t>();
  position.last_ns = last_ns->get<std::string>();
  position.last_name = last_name->get<std::string>();
  return position;
}

}  // namespace storage_internal
}  // namespace sluice::apiserver
