// PNG plots through gnuplot, for `sluice plot`, and the choice between PNG and SVG.
//
// FindInPath looks an executable up in a PATH string (taken from the environment map, so tests
// pass their own); ChoosePlotFormat decides png or svg; GnuplotScript writes the script (pure):
// `set terminal <terminal> size W,H`, `set multiplot layout 2,2`, one `plot` per panel with one
// data file per series (two columns: version, value), a panel without series is drawn empty.
// RenderPng writes the data files and the script into a fresh temporary directory, runs gnuplot
// with `pngcairo`, and once more with the plain `png` terminal when that fails (gnuplot built
// without cairo), then removes the directory.
//
// Thread safety: plain functions; RenderPng forks gnuplot and waits for it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "localcluster/cli/command_line.h"
#include "localcluster/cli/plot_panels.h"

namespace sluice::cli {

// The first `dir/name` that is an executable regular file, for each dir of the colon-separated
// `search_path` (an empty entry is the current directory, as in POSIX); nullopt when none.
std::optional<std::string> FindInPath(const std::string& name, const std::string& search_path);

// kPng or kSvg. kAuto: from `output`'s extension when it is .png or .svg, else png when gnuplot
// is available, else svg. InvalidArgument when png is wanted (asked for, or an output ending in
// .png) but there is no gnuplot.
Result<PlotFormat> ChoosePlotFormat(PlotFormat requested, const std::string& output,
                                    bool have_gnuplot);

// A gnuplot string literal: single-quoted, a quote doubled.
std::string GnuplotQuote(const std::string& text);

// `data_files[i][j]` is the file of panels[i].series[j].
std::string GnuplotScript(const std::vector<PlotPanel>& panels,
                          const std::vector<std::vector<std::string>>& data_files,
                          const std::string& output, const std::string& terminal,
                          const std::string& title);

// Renders `panels` to `output` (PNG) with the gnuplot executable at `gnuplot`. Internal with the
// end of gnuplot's output when it fails.
Status RenderPng(const std::vector<PlotPanel>& panels, const std::string& gnuplot,
                 const std::string& output, const std::string& title);

}  // namespace sluice::cli
