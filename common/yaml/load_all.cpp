#include "common/yaml/load_all.h"

#include <yaml-cpp/eventhandler.h>

#include <optional>
#include <sstream>
#include <string>

namespace sluice::yaml {
namespace {

// Throws when a document starts at the mark the previous one started at: the parser made no
// progress, and would not make any on the next turn either.
class ProgressCheck final : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override {
    if (last_start_ && last_start_->pos == mark.pos) {
      throw YAML::ParserException(mark,
                                  "unexpected ',' (or another flow token) where a document "
                                  "should start");
    }
    last_start_ = mark;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}

 private:
  std::optional<YAML::Mark> last_start_;
};

}  // namespace

std::vector<YAML::Node> LoadAllDocuments(std::string_view text) {
  const std::string copy(text);
  {
    std::istringstream in(copy);
    YAML::Parser parser(in);
    ProgressCheck check;
    while (parser.HandleNextDocument(check)) {
    }
  }
  return YAML::LoadAll(copy);
}

}  // namespace sluice::yaml
