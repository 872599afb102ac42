#include "localcluster/cli/plot_command.h"

#include <filesystem>
#include <fstream>

#include "localcluster/cli/gnuplot.h"
#include "localcluster/cli/install_paths.h"
#include "localcluster/cli/plot_panels.h"
#include "localcluster/cli/progress_log.h"
#include "localcluster/cli/state_layout.h"
#include "localcluster/cli/svg_plot.h"

namespace sluice::cli {

int RunPlot(const PlotOptions& options, std::ostream& out, std::ostream& err) {
  const std::string cwd = CurrentDirectory();
  const StateLayout layout(AbsolutePath(options.state_dir, cwd));
  const std::string path = layout.ProgressLog(options.experiment);
  Result<ProgressLog> log = ReadProgressLog(path);
  if (!log.ok()) {
    err << "sluice plot: experiment " << options.experiment << ": " << log.status().message()
        << "\n";
    return kExitFailure;
  }
  if (log->skipped > 0) {
    err << "sluice plot: skipped " << log->skipped << " malformed line(s) of " << path << "\n";
  }
  if (log->rows.empty()) {
    err << "sluice plot: " << path << " has no samples\n";
    return kExitFailure;
  }

  const std::optional<std::string> gnuplot = FindInPath("gnuplot", options.search_path);
  Result<PlotFormat> format = ChoosePlotFormat(options.format, options.output, gnuplot.has_value());
  if (!format.ok()) {
    err << "sluice plot: " << format.status().message() << "\n";
    return kExitFailure;
  }
  const bool png = *format == PlotFormat::kPng;
  const std::string output = options.output.empty() ? layout.ExperimentDir(options.experiment) +
                                                          (png ? "/progress.png" : "/progress.svg")
                                                    : AbsolutePath(options.output, cwd);
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(output).parent_path(), ec);

  const std::vector<PlotPanel> panels = BuildPanels(log->rows);
  const std::string title = "sluice experiment " + options.experiment;
  if (png) {
    if (Status s = RenderPng(panels, *gnuplot, output, title); !s.ok()) {
      err << "sluice plot: " << s.message() << "\n";
      return kExitFailure;
    }
  } else {
    SvgOptions svg;
    svg.title = title;
    std::ofstream file(output, std::ios::binary | std::ios::trunc);
    file << RenderSvg(panels, svg);
    file.flush();
    if (!file) {
      err << "sluice plot: cannot write " << output << "\n";
      return kExitFailure;
    }
  }
  out << output << "\n";
  return kExitOk;
}

}  // namespace sluice::cli
