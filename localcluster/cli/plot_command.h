// `sluice plot`: draws DIR/experiments/EXPERIMENT/progress.jsonl (progress_log.h) as the four
// panels of plot_panels.h: PNG through gnuplot (gnuplot.h) or SVG (svg_plot.h), as
// ChoosePlotFormat decides from --format, --output and whether gnuplot is in $PATH. Prints the
// path written. Exit 1 when nothing is recorded (naming the file), or the plot cannot be
// written.
//
// Thread safety: a plain function.
#pragma once

#include <ostream>

#include "localcluster/cli/command_line.h"

namespace sluice::cli {

int RunPlot(const PlotOptions& options, std::ostream& out, std::ostream& err);

}  // namespace sluice::cli
