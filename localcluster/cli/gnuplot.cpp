#include "localcluster/cli/gnuplot.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "localcluster/cli/ensure_component.h"

extern char** environ;

namespace sluice::cli {
namespace {

bool EndsWith(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string Num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

// Runs `argv` with stdout and stderr to `log`; the exit status, or an error.
Result<int> RunAndWait(const std::vector<std::string>& argv, const std::string& log) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return Status::Internal("starting " + argv[0] + ": " + std::strerror(rc));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR)
      return Status::Internal("waiting for " + argv[0] + ": " + std::strerror(errno));
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

std::string ReadTail(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  std::string s = text.str();
  if (s.size() > 2000) s = s.substr(s.size() - 2000);
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

}  // namespace

std::optional<std::string> FindInPath(const std::string& name, const std::string& search_path) {
  if (name.empty() || name.find('/') != std::string::npos) return std::nullopt;
  size_t start = 0;
  while (start <= search_path.size()) {
    size_t end = search_path.find(':', start);
    if (end == std::string::npos) end = search_path.size();
    std::string dir = search_path.substr(start, end - start);
    if (dir.empty()) dir = ".";
    const std::string candidate = dir + "/" + name;
    if (IsExecutableFile(candidate)) return candidate;
    start = end + 1;
  }
  return std::nullopt;
}

Result<PlotFormat> ChoosePlotFormat(PlotFormat requested, const std::string& output,
                                    bool have_gnuplot) {
  PlotFormat format = requested;
  if (format == PlotFormat::kAuto) {
    if (EndsWith(output, ".svg")) {
      format = PlotFormat::kSvg;
    } else if (EndsWith(output, ".png")) {
      format = PlotFormat::kPng;
    } else {
      format = have_gnuplot ? PlotFormat::kPng : PlotFormat::kSvg;
    }
  }
  if (format == PlotFormat::kPng && !have_gnuplot) {
    return Status::InvalidArgument(
        "PNG needs gnuplot, which is not in PATH; install it, or use --format svg");
  }
  return format;
}

std::string GnuplotQuote(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\n') continue;
    out += c;
    if (c == '\'') out += '\'';
  }
  return out + "'";
}

std::string GnuplotScript(const std::vector<PlotPanel>& panels,
                          const std::vector<std::vector<std::string>>& data_files,
                          const std::string& output, const std::string& terminal,
                          const std::string& title) {
  std::string s;
  s += "set terminal " + terminal + " size 1200,800\n";
  s += "set output " + GnuplotQuote(output) + "\n";
  s += "set key top left\n";
  s += "set grid\n";
  s += "set multiplot layout 2,2 title " + GnuplotQuote(title) + "\n";
  for (size_t i = 0; i < panels.size(); ++i) {
    const PlotPanel& panel = panels[i];
    s += "set title " + GnuplotQuote(panel.title) + "\n";
    s += "set xlabel 'version'\n";
    s += "set ylabel " + GnuplotQuote(panel.y_label) + "\n";
    std::string plot;
    for (size_t j = 0; j < panel.series.size(); ++j) {
      if (panel.series[j].points.empty() || i >= data_files.size() || j >= data_files[i].size()) {
        continue;
      }
      plot += (plot.empty() ? "plot " : ", ") + GnuplotQuote(data_files[i][j]) +
              " using 1:2 with lines lw 2 title " + GnuplotQuote(panel.series[j].name);
    }
    if (plot.empty()) {
      // Nothing to draw: an empty frame that says so.
      s += "set label 1 'no data' at graph 0.5,0.5 center\n";
      s += "plot [0:1] [0:1] NaN notitle\n";
      s += "unset label 1\n";
    } else {
      s += plot + "\n";
    }
  }
  s += "unset multiplot\n";
  s += "set output\n";
  return s;
}

Status RenderPng(const std::vector<PlotPanel>& panels, const std::string& gnuplot,
                 const std::string& output, const std::string& title) {
  std::error_code ec;
  const std::filesystem::path tmp_root = std::filesystem::temp_directory_path(ec);
  std::string pattern = (ec ? std::string("/tmp") : tmp_root.string()) + "/sluice-plot-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) {
    return Status::Internal("creating a temporary directory: " + std::string(std::strerror(errno)));
  }
  const std::string dir = pattern;
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
    }
  } cleanup{dir};

  std::vector<std::vector<std::string>> files(panels.size());
  for (size_t i = 0; i < panels.size(); ++i) {
    for (size_t j = 0; j < panels[i].series.size(); ++j) {
      const std::string file =
          dir + "/panel" + std::to_string(i) + "-series" + std::to_string(j) + ".dat";
      std::ofstream data(file);
      for (const auto& [x, y] : panels[i].series[j].points) data << Num(x) << " " << Num(y) << "\n";
      if (!data) return Status::Internal("writing " + file);
      files[i].push_back(file);
    }
  }
  std::string last_error;
  for (const char* terminal : {"pngcairo", "png"}) {
    const std::string script = dir + "/plot-" + terminal + ".gp";
    {
      std::ofstream out(script);
      out << GnuplotScript(panels, files, output, terminal, title);
      if (!out) return Status::Internal("writing " + script);
    }
    const std::string log = dir + "/gnuplot.log";
    SLUICE_ASSIGN_OR_RETURN(int code, RunAndWait({gnuplot, script}, log));
    if (code == 0) return Status::Ok();
    last_error = "gnuplot (terminal " + std::string(terminal) + ") exited with " +
                 std::to_string(code) + ": " + ReadTail(log);
  }
  return Status::Internal(last_error);
}

}  // namespace sluice::cli
