#include "localcluster/cli/progress_log.h"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace sluice::cli {

Status AppendProgress(const std::string& path, const std::vector<ProgressRow>& rows) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  if (ec) return Status::Internal("creating the directory of " + path + ": " + ec.message());
  std::string text;
  for (const ProgressRow& row : rows) text += ProgressRowToJson(row).dump() + "\n";
  std::ofstream file(path, std::ios::app | std::ios::binary);
  if (!file) return Status::Internal("cannot open " + path + " for appending");
  file << text;
  file.flush();
  if (!file) return Status::Internal("writing " + path + " failed");
  return Status::Ok();
}

ProgressLog ParseProgressLog(const std::string& text) {
  ProgressLog log;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    Result<ProgressRow> row = ProgressRowFromJson(j);
    if (row.ok()) {
      log.rows.push_back(std::move(*row));
    } else {
      ++log.skipped;
    }
  }
  return log;
}

Result<ProgressLog> ReadProgressLog(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
      return Status::NotFound(path + " does not exist (record one with `sluice run`)");
    }
    return Status::Internal("cannot read " + path);
  }
  std::ostringstream text;
  text << file.rdbuf();
  return ParseProgressLog(text.str());
}

}  // namespace sluice::cli
