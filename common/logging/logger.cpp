#include "common/logging/logger.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <utility>

namespace sluice::log {

struct Logger::Output {
  Output(const Clock& c, LineSink s) : clock(c), sink(std::move(s)) {}

  const Clock& clock;
  LineSink sink;
  // Serializes sink calls, so that lines never interleave.
  std::mutex mu;
};

namespace {

using OrderedJson = nlohmann::ordered_json;

// Appends the newline and writes the line with as few write(2) calls as the kernel allows
// (one, normally), so that other processes sharing stderr rarely cut into it either.
void WriteToStderr(std::string_view line) {
  std::string buf;
  buf.reserve(line.size() + 1);
  buf.append(line);
  buf.push_back('\n');
  size_t done = 0;
  while (done < buf.size()) {
    const ssize_t n = ::write(STDERR_FILENO, buf.data() + done, buf.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;  // Nowhere left to report a failure to write the log.
    }
    done += static_cast<size_t>(n);
  }
}

bool IsFixedKey(std::string_view key) {
  return key == "time" || key == "level" || key == "component" || key == "msg";
}

void AddField(OrderedJson& line, const Field& field) {
  // operator[] keeps the first position of a repeated key and the last value.
  if (IsFixedKey(field.first)) {
    line["fields." + field.first] = field.second;
  } else {
    line[field.first] = field.second;
  }
}

}  // namespace

const std::shared_ptr<Logger::Output>& Logger::StderrOutput() {
  // One Output, hence one lock, for every default logger; never destroyed, so that logging from
  // other static destructors still works.
  static const auto* output =
      new std::shared_ptr<Output>(std::make_shared<Output>(SystemClock::Instance(), WriteToStderr));
  return *output;
}

Logger::Logger(std::string component) : Logger(StderrOutput(), std::move(component), {}) {}

Logger::Logger(std::string component, const Clock& clock, LineSink sink)
    : Logger(std::make_shared<Output>(clock, std::move(sink)), std::move(component), {}) {}

Logger::Logger(std::shared_ptr<Output> output, std::string component, Fields fields)
    : output_(std::move(output)), component_(std::move(component)), fields_(std::move(fields)) {}

void Logger::Log(Level level, std::string_view msg, const Fields& fields) const {
  if (!Enabled(level)) return;
  OrderedJson line = OrderedJson::object();
  line["time"] = FormatTimestamp(output_->clock.WallNow());
  line["level"] = LevelName(level);
  line["component"] = component_;
  line["msg"] = msg;
  for (const Field& field : fields_) AddField(line, field);
  for (const Field& field : fields) AddField(line, field);
  const std::string text = line.dump(/*indent=*/-1, /*indent_char=*/' ', /*ensure_ascii=*/false,
                                     OrderedJson::error_handler_t::replace);
  std::lock_guard<std::mutex> lock(output_->mu);
  output_->sink(text);
}

Logger Logger::With(const Fields& fields) const {
  Fields combined = fields_;
  combined.insert(combined.end(), fields.begin(), fields.end());
  return Logger(output_, component_, std::move(combined));
}

std::string FormatTimestamp(Clock::WallTime t) {
  using std::chrono::days;
  using std::chrono::milliseconds;
  const auto ms = std::chrono::floor<milliseconds>(t);
  const auto day = std::chrono::floor<days>(ms);
  const std::chrono::year_month_day ymd{day};
  const std::chrono::hh_mm_ss<milliseconds> hms{ms - day};
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%04d-%02u-%02uT%02d:%02d:%02d.%03dZ",
                static_cast<int>(ymd.year()), static_cast<unsigned>(ymd.month()),
                static_cast<unsigned>(ymd.day()), static_cast<int>(hms.hours().count()),
                static_cast<int>(hms.minutes().count()), static_cast<int>(hms.seconds().count()),
                static_cast<int>(hms.subseconds().count()));
  return buf;
}

}  // namespace sluice::log
