#include "localcluster/cli/svg_plot.h"

#include <algorithm>
#include <cstdio>
#include <limits>

#include "localcluster/cli/progress_render.h"

namespace sluice::cli {
namespace {

constexpr const char* kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                   "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};

std::string SvgNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", v);
  return buf;
}

struct Range {
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
  void Add(double v) {
    min = std::min(min, v);
    max = std::max(max, v);
  }
  bool empty() const { return min > max; }
};

std::string Text(double x, double y, std::string_view text, const char* anchor,
                 const std::string& extra = {}) {
  return "<text x=\"" + SvgNumber(x) + "\" y=\"" + SvgNumber(y) + "\" text-anchor=\"" + anchor +
         "\"" + extra + ">" + EscapeXml(text) + "</text>\n";
}

std::string Line(double x1, double y1, double x2, double y2, const char* stroke) {
  return "<line x1=\"" + SvgNumber(x1) + "\" y1=\"" + SvgNumber(y1) + "\" x2=\"" + SvgNumber(x2) +
         "\" y2=\"" + SvgNumber(y2) + "\" stroke=\"" + stroke + "\"/>\n";
}

std::string RenderPanel(const PlotPanel& panel, const PlotArea& area) {
  std::string out = "<g class=\"panel\">\n";
  out += Text(area.left + area.width / 2, area.top - 10, panel.title, "middle",
              " font-weight=\"bold\"");
  Range xr, yr;
  for (const PlotSeries& s : panel.series) {
    for (const auto& [x, y] : s.points) {
      xr.Add(x);
      yr.Add(y);
    }
  }
  const double bottom = area.top + area.height;
  const double right = area.left + area.width;
  out += Line(area.left, bottom, right, bottom, "#000");        // x axis
  out += Line(area.left, area.top, area.left, bottom, "#000");  // y axis
  out += Text(area.left + area.width / 2, bottom + 32, "version", "middle");
  out += Text(area.left - 55, area.top + area.height / 2, panel.y_label, "middle",
              " transform=\"rotate(-90 " + SvgNumber(area.left - 55) + " " +
                  SvgNumber(area.top + area.height / 2) + ")\"");
  if (xr.empty()) {
    out += Text(area.left + area.width / 2, area.top + area.height / 2, "no data", "middle");
    return out + "</g>\n";
  }
  if (xr.max == xr.min) xr.max = xr.min + 1;
  if (yr.max == yr.min) {
    yr.min -= 1;
    yr.max += 1;
  }
  out += Text(area.left, bottom + 16, FormatNumber(xr.min), "start");
  out += Text(right, bottom + 16, FormatNumber(xr.max), "end");
  out += Text(area.left - 4, bottom, FormatNumber(yr.min), "end");
  out += Text(area.left - 4, area.top + 10, FormatNumber(yr.max), "end");

  size_t color = 0;
  double legend_y = area.top + 14;
  for (const PlotSeries& s : panel.series) {
    if (s.points.empty()) continue;
    const char* stroke = kColors[color++ % (sizeof(kColors) / sizeof(kColors[0]))];
    std::string points;
    for (const auto& [x, y] : s.points) {
      const double px = area.left + (x - xr.min) / (xr.max - xr.min) * area.width;
      const double py = bottom - (y - yr.min) / (yr.max - yr.min) * area.height;
      points += (points.empty() ? "" : " ") + SvgNumber(px) + "," + SvgNumber(py);
    }
    out += "<polyline fill=\"none\" stroke=\"" + std::string(stroke) +
           "\" stroke-width=\"1.5\" points=\"" + points + "\"><title>" + EscapeXml(s.name) +
           "</title></polyline>\n";
    out += Line(right - 150, legend_y - 4, right - 130, legend_y - 4, stroke);
    out += Text(right - 125, legend_y, s.name, "start");
    legend_y += 14;
  }
  return out + "</g>\n";
}

}  // namespace

PlotArea PanelPlotArea(size_t index, size_t count, const SvgOptions& options) {
  const size_t rows = std::max<size_t>(1, (count + 1) / 2);
  const double cell_w = options.width / 2.0;
  const double cell_h = (options.height - kSvgTitleHeight) / static_cast<double>(rows);
  const double cell_x = static_cast<double>(index % 2) * cell_w;
  const double cell_y = kSvgTitleHeight + static_cast<double>(index / 2) * cell_h;
  PlotArea area;
  area.left = cell_x + kSvgMarginLeft;
  area.top = cell_y + kSvgMarginTop;
  area.width = std::max(1.0, cell_w - kSvgMarginLeft - kSvgMarginRight);
  area.height = std::max(1.0, cell_h - kSvgMarginTop - kSvgMarginBottom);
  return area;
}

std::string EscapeXml(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string RenderSvg(const std::vector<PlotPanel>& panels, const SvgOptions& options) {
  const std::string w = std::to_string(options.width);
  const std::string h = std::to_string(options.height);
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + w + "\" height=\"" + h +
         "\" viewBox=\"0 0 " + w + " " + h + "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  out += "<rect x=\"0\" y=\"0\" width=\"" + w + "\" height=\"" + h + "\" fill=\"#fff\"/>\n";
  if (!options.title.empty()) {
    out += Text(options.width / 2.0, 26, options.title, "middle", " font-size=\"16\"");
  }
  for (size_t i = 0; i < panels.size(); ++i) {
    out += RenderPanel(panels[i], PanelPlotArea(i, panels.size(), options));
  }
  return out + "</svg>\n";
}

}  // namespace sluice::cli
