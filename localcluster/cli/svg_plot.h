// Our own SVG writer for `sluice plot` (used when gnuplot is missing, or with --format svg).
// Pure: panels in, SVG text out.
//
// Layout (user units = pixels): a title band of kSvgTitleHeight at the top, then the panels on
// a grid of two columns, row by row. Inside each cell the plot area leaves kSvgMarginLeft,
// kSvgMarginRight, kSvgMarginTop (the panel title) and kSvgMarginBottom (x ticks, x label).
// Each panel has: its title, an x and a y axis, tick labels at the minimum and maximum of each
// axis, one <polyline> per series with points (a series without points is skipped: no line, no
// legend entry), and a legend in the plot area's top-right corner. A panel with nothing to draw
// says "no data".
//
// Scaling: x maps [xmin, xmax] of the panel's points onto the plot area's width, y maps
// [ymin, ymax] onto its height (upwards); a range of zero width is widened to [v - 1, v + 1]
// (x: [v, v + 1]) so a single point or a constant series is still drawn. Coordinates are written
// with one decimal.
//
// All text is XML-escaped (& < > " '), so series and experiment names are safe.
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "localcluster/cli/plot_panels.h"

namespace sluice::cli {

inline constexpr double kSvgTitleHeight = 40;
inline constexpr double kSvgMarginLeft = 70;
inline constexpr double kSvgMarginRight = 20;
inline constexpr double kSvgMarginTop = 30;
inline constexpr double kSvgMarginBottom = 40;

struct SvgOptions {
  int width = 1000;  // Pixels.
  int height = 700;
  std::string title;  // Above the panels; "" for none.
};

// The plot area of panel `index` of `count`.
struct PlotArea {
  double left = 0;
  double top = 0;
  double width = 0;
  double height = 0;
};
PlotArea PanelPlotArea(size_t index, size_t count, const SvgOptions& options);

std::string EscapeXml(std::string_view text);

std::string RenderSvg(const std::vector<PlotPanel>& panels, const SvgOptions& options);

}  // namespace sluice::cli
