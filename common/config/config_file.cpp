#include "common/config/config_file.h"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstdio>
#include <set>
#include <system_error>
#include <utility>

#include "common/config/suggest.h"
#include "common/config/value_parsers.h"
#include "common/yaml/load_all.h"

namespace sluice::config {
namespace {

std::string LineSuffix(const YAML::Node& node) {
  const YAML::Mark mark = node.Mark();
  if (mark.is_null()) return {};
  return " (line " + std::to_string(mark.line + 1) + ")";
}

// What a value of this type looks like, for "expected ..., got ..." messages.
std::string Expected(const Option& option) {
  switch (option.type()) {
    case OptionType::kString:
      return "a string";
    case OptionType::kInt:
      return "an integer";
    case OptionType::kDouble:
      return "a number";
    case OptionType::kBool:
      return "a boolean";
    case OptionType::kDuration:
      return "a duration";
    case OptionType::kBytes:
      return "a byte size";
    case OptionType::kStringList:
      return "a list";
    case OptionType::kEnum:
      return "a string";
  }
  return "a value";
}

std::string_view Got(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map:
      return "a map";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Scalar:
      return "a scalar";
    case YAML::NodeType::Null:
      return "null";
    case YAML::NodeType::Undefined:
      return "nothing";
  }
  return "something else";
}

class Walker {
 public:
  Walker(const Spec& spec, std::string_view file_name, ConfigFileContents* out)
      : spec_(spec), prefix_("file " + std::string(file_name) + ": "), out_(out) {
    for (const Option& option : spec.options()) keys_.push_back(option.yaml_key());
  }

  void WalkDocument(const YAML::Node& root) {
    if (root.IsNull()) return;  // An empty file sets nothing.
    if (!root.IsMap()) {
      out_->unreadable = true;
      Error("expected a map of keys at the top level, got " + std::string(Got(root)) +
            LineSuffix(root));
      return;
    }
    WalkMap(root, "");
  }

  void Error(std::string message) { out_->errors.push_back(prefix_ + message); }

 private:
  void WalkMap(const YAML::Node& map, const std::string& section) {
    std::set<std::string> seen;
    for (const auto& entry : map) {
      const YAML::Node& key_node = entry.first;
      const YAML::Node& value = entry.second;
      if (!key_node.IsScalar()) {
        Error((section.empty() ? std::string("a key") : "a key in " + section) +
              " is not a string" + LineSuffix(key_node));
        continue;
      }
      const std::string path =
          section.empty() ? key_node.Scalar() : section + "." + key_node.Scalar();
      if (!seen.insert(key_node.Scalar()).second) {
        Error("key " + path + " appears more than once" + LineSuffix(key_node));
        continue;
      }
      if (const Option* option = spec_.FindByYamlKey(path)) {
        Leaf(*option, path, value);
      } else if (spec_.IsYamlSection(path)) {
        if (value.IsMap()) {
          WalkMap(value, path);
        } else if (!value.IsNull()) {
          Error("key " + path + ": expected a map, got " + std::string(Got(value)) +
                LineSuffix(value));
        }
      } else {
        std::string message = "unknown key " + Quote(path);
        if (auto match = ClosestMatch(path, keys_))
          message += " (did you mean " + Quote(*match) + "?)";
        Error(message + LineSuffix(key_node));
      }
    }
  }

  void Leaf(const Option& option, const std::string& path, const YAML::Node& value) {
    if (value.IsNull()) return;
    const std::string where = "key " + path + ": ";
    RawValue raw;
    raw.source = ValueSource::kFile;
    raw.origin = prefix_ + "key " + path;
    raw.line = static_cast<int>(value.Mark().line) + 1;
    if (option.type() == OptionType::kStringList) {
      if (!value.IsSequence()) {
        Error(where + "expected a list, got " + std::string(Got(value)) + LineSuffix(value));
        return;
      }
      raw.split_commas = false;
      bool ok = true;
      for (size_t i = 0; i < value.size(); ++i) {
        const YAML::Node item = value[i];
        if (!item.IsScalar()) {
          Error(where + "item " + std::to_string(i + 1) + ": expected a string, got " +
                std::string(Got(item)) + LineSuffix(item));
          ok = false;
          continue;
        }
        raw.texts.push_back(item.Scalar());
      }
      if (ok) out_->values.insert_or_assign(option.flag(), std::move(raw));
      return;
    }
    if (!value.IsScalar()) {
      Error(where + "expected " + Expected(option) + ", got " + std::string(Got(value)) +
            LineSuffix(value));
      return;
    }
    raw.texts.push_back(value.Scalar());
    out_->values.insert_or_assign(option.flag(), std::move(raw));
  }

  const Spec& spec_;
  std::string prefix_;
  ConfigFileContents* out_;
  std::vector<std::string> keys_;
};

}  // namespace

ConfigFileContents ParseConfigYaml(const Spec& spec, std::string_view yaml,
                                   std::string_view file_name) {
  ConfigFileContents out;
  Walker walker(spec, file_name, &out);
  try {
    const std::vector<YAML::Node> documents = yaml::LoadAllDocuments(yaml);
    if (documents.size() > 1) {
      out.unreadable = true;
      walker.Error("expected one YAML document, found " + std::to_string(documents.size()));
      return out;
    }
    if (!documents.empty()) walker.WalkDocument(documents.front());
  } catch (const YAML::Exception& e) {
    // yaml-cpp marks are 0-based; editors count from 1.
    std::string message = "YAML syntax error";
    if (!e.mark.is_null()) {
      message += " at line " + std::to_string(e.mark.line + 1) + ", column " +
                 std::to_string(e.mark.column + 1);
    }
    out.unreadable = true;
    walker.Error(message + ": " + e.msg);
  }
  return out;
}

ConfigFileContents ReadConfigFile(const Spec& spec, const std::string& path) {
  const auto failure = [&](int error) {
    ConfigFileContents out;
    out.errors.push_back("file " + path + ": cannot read: " +
                         std::error_code(error, std::generic_category()).message());
    out.unreadable = true;
    return out;
  };
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return failure(errno);
  std::string text;
  char buffer[8192];
  size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof(buffer), file)) > 0) text.append(buffer, n);
  const bool failed = std::ferror(file) != 0;
  const int error = errno;
  std::fclose(file);
  if (failed) return failure(error);
  return ParseConfigYaml(spec, text, path);
}

}  // namespace sluice::config
