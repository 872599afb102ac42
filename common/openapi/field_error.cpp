#include "common/openapi/field_error.h"

namespace sluice::openapi {

std::string JoinPath(std::string_view parent, std::string_view child) {
  if (parent.empty()) return std::string(child);
  std::string out(parent);
  out += '.';
  out += child;
  return out;
}

std::string IndexPath(std::string_view parent, size_t index) {
  return std::string(parent) + "[" + std::to_string(index) + "]";
}

std::string KeyPath(std::string_view parent, std::string_view key) {
  std::string out(parent);
  out += '[';
  out += key;
  out += ']';
  return out;
}

std::string Describe(const FieldErrors& errors) {
  std::string out;
  for (const FieldError& e : errors) {
    if (!out.empty()) out += '\n';
    out += e.field.empty() ? e.message : e.field + ": " + e.message;
  }
  return out;
}

Status ToStatus(const FieldErrors& errors, std::string_view what) {
  if (errors.empty()) return Status::Ok();
  return Status::Unprocessable(std::string(what) + " is invalid:\n" + Describe(errors),
                               errors.front().field);
}

}  // namespace sluice::openapi
