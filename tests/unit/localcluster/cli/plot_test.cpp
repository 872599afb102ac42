// Tests of `sluice plot`: the panels built from progress rows (plot_panels.h), our SVG writer
// (svg_plot.h), the gnuplot lookup and format choice and script (gnuplot.h; gnuplot itself is
// not needed), and the command end to end on a recorded log, which writes SVG when PATH has no
// gnuplot.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>

#include "localcluster/cli/gnuplot.h"
#include "localcluster/cli/plot_command.h"
#include "localcluster/cli/plot_panels.h"
#include "localcluster/cli/progress_log.h"
#include "localcluster/cli/state_layout.h"
#include "localcluster/cli/svg_plot.h"

namespace sluice::cli {
namespace {

size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

// A minimal well-formedness check: every tag closes in order, attributes are quoted, and text
// has no raw '<' or stray '&'.
::testing::AssertionResult WellFormed(const std::string& xml) {
  std::vector<std::string> open;
  size_t i = 0;
  if (xml.rfind("<?xml", 0) == 0) i = xml.find("?>") + 2;
  while (i < xml.size()) {
    if (xml[i] == '&') {
      static const std::regex entity("^&(amp|lt|gt|quot|apos);");
      if (!std::regex_search(xml.substr(i, 8), entity)) {
        return ::testing::AssertionFailure() << "bad entity at " << i;
      }
      ++i;
      continue;
    }
    if (xml[i] != '<') {
      ++i;
      continue;
    }
    const size_t end = xml.find('>', i);
    if (end == std::string::npos) return ::testing::AssertionFailure() << "unclosed tag at " << i;
    std::string tag = xml.substr(i + 1, end - i - 1);
    if (Count(tag, "\"") % 2 != 0) return ::testing::AssertionFailure() << "quotes in " << tag;
    if (tag.find('<') != std::string::npos) return ::testing::AssertionFailure() << "< in tag";
    if (tag[0] == '/') {
      const std::string name = tag.substr(1);
      if (open.empty() || open.back() != name) {
        return ::testing::AssertionFailure() << "</" << name << "> closes nothing open";
      }
      open.pop_back();
    } else if (tag.back() != '/') {
      open.push_back(tag.substr(0, tag.find_first_of(" \n")));
    }
    i = end + 1;
  }
  if (!open.empty()) return ::testing::AssertionFailure() << "<" << open.back() << "> not closed";
  return ::testing::AssertionSuccess();
}

std::vector<std::string> Polylines(const std::string& svg) {
  std::vector<std::string> out;
  static const std::regex re("<polyline [^>]*points=\"([^\"]*)\"");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), re); it != std::sregex_iterator();
       ++it) {
    out.push_back((*it)[1]);
  }
  return out;
}

std::vector<ProgressRow> Rows() {
  std::vector<ProgressRow> rows;
  for (int i = 0; i < 5; ++i) {
    ProgressRow r;
    r.t = 1000 + 2 * i;
    r.trainer = "tiny";
    r.version = 10 * i;
    r.reward_mean = 0.1 * i;
    if (i >= 2) {
      r.eval_accuracy = 0.5;
      r.eval_version = 10 * (i - 2);  // Evaluation lags the trainer.
    }
    r.rollout_tokens_per_second = 100 * i;
    r.region_replicas["us"] = 2;
    if (i % 2 == 0) r.region_replicas["eu"] = 1;
    rows.push_back(r);
  }
  return rows;
}

TEST(PlotPanelsTest, FourPanelsWithTheSeriesThatHaveValues) {
  std::vector<PlotPanel> panels = BuildPanels(Rows());
  ASSERT_EQ(panels.size(), 4u);
  EXPECT_EQ(panels[0].title, "Reward and eval accuracy");
  ASSERT_EQ(panels[0].series.size(), 2u);
  EXPECT_EQ(panels[0].series[0].name, "reward mean");
  EXPECT_EQ(panels[0].series[0].points.size(), 5u);
  EXPECT_EQ(panels[0].series[0].points[4].first, 40.0);  // The row's version, not seconds.
  EXPECT_DOUBLE_EQ(panels[0].series[0].points[4].second, 0.4);
  EXPECT_EQ(panels[0].series[1].points.size(), 3u);     // Only the rows with a value.
  EXPECT_EQ(panels[0].series[1].points[0].first, 0.0);  // The evaluated version.
  ASSERT_EQ(panels[1].series.size(), 1u);  // Training tokens/s never reported: no series.
  EXPECT_EQ(panels[1].series[0].name, "rollout");
  ASSERT_EQ(panels[2].series.size(), 2u);  // One per region, sorted.
  EXPECT_EQ(panels[2].series[0].name, "eu");
  EXPECT_EQ(panels[2].series[0].points.size(), 3u);
  EXPECT_EQ(panels[2].series[1].name, "us");
  EXPECT_TRUE(panels[3].series.empty());

  // Two trainers: names are prefixed.
  std::vector<ProgressRow> rows = Rows();
  rows[1].trainer = "other";
  panels = BuildPanels(rows);
  EXPECT_EQ(panels[0].series[0].name, "tiny reward mean");
  EXPECT_EQ(panels[0].series[1].name, "other reward mean");
}

using Points = std::vector<std::pair<double, double>>;

// The points of the series `name` in `panel`; nullopt when the panel has no such series.
std::optional<Points> SeriesPoints(const PlotPanel& panel, const std::string& name) {
  for (const PlotSeries& series : panel.series) {
    if (series.name == name) return series.points;
  }
  return std::nullopt;
}

// One sample whose every version-keyed value (reward, both throughputs, total replicas,
// staleness) is `value`, so one table checks all of those series.
struct Sample {
  double t;
  std::optional<int64_t> version;
  std::optional<int64_t> value;
};

TEST(PlotPanelsTest, VersionKeyedSeriesHaveOnePointPerVersionFromTheLastRow) {
  struct Case {
    const char* name;
    std::vector<Sample> samples;
    Points want;  // Empty: the series is left out.
  };
  const std::vector<Case> cases = {
      {"rows at t=0,10,20 with versions 5,5,7",
       {{0, 5, 1}, {10, 5, 2}, {20, 7, 3}},
       {{5, 2}, {7, 3}}},
      {"x is the version even when time jumps", {{1000, 1, 4}, {5000, 2, 6}}, {{1, 4}, {2, 6}}},
      {"a row without version adds nothing", {{0, std::nullopt, 1}, {10, 3, 2}}, {{3, 2}}},
      {"no row has a version", {{0, std::nullopt, 1}, {10, std::nullopt, 2}}, {}},
      {"a row without a value keeps the version's last value",
       {{0, 5, 1}, {10, 5, std::nullopt}, {20, 6, 2}},
       {{5, 1}, {6, 2}}},
      {"points by increasing version", {{0, 9, 1}, {10, 4, 2}}, {{4, 2}, {9, 1}}},
      {"version 0 is a version", {{0, 0, 7}}, {{0, 7}}},
  };
  const std::vector<std::pair<size_t, std::string>> series = {
      {0, "reward mean"}, {1, "rollout"}, {1, "training"}, {2, "total"}, {3, "staleness"}};
  for (const Case& c : cases) {
    std::vector<ProgressRow> rows;
    for (const Sample& s : c.samples) {
      ProgressRow r;
      r.t = s.t;
      r.trainer = "tiny";
      r.version = s.version;
      if (s.value) {
        const auto v = static_cast<double>(*s.value);
        r.reward_mean = v;
        r.rollout_tokens_per_second = v;
        r.train_tokens_per_second = v;
        r.replicas_total = *s.value;
        r.staleness_mean = v;
      }
      rows.push_back(r);
    }
    const std::vector<PlotPanel> panels = BuildPanels(rows);
    ASSERT_EQ(panels.size(), 4u) << c.name;
    for (const auto& [panel, name] : series) {
      const std::optional<Points> got = SeriesPoints(panels[panel], name);
      if (c.want.empty()) {
        EXPECT_FALSE(got.has_value()) << c.name << ": " << name;
      } else {
        EXPECT_EQ(got, c.want) << c.name << ": " << name;
      }
    }
  }
}

TEST(PlotPanelsTest, EvalAccuracyIsKeyedOnTheEvaluatedVersion) {
  struct EvalSample {
    double t;
    std::optional<int64_t> version;
    std::optional<int64_t> eval_version;
    std::optional<double> accuracy;
  };
  struct Case {
    const char* name;
    std::vector<EvalSample> samples;
    Points want;  // Empty: no eval accuracy series.
  };
  const std::vector<Case> cases = {
      {"x is eval_version, not the row's version",
       {{0, 10, 4, 0.25}, {10, 12, 4, 0.25}, {20, 15, 12, 0.5}},
       {{4, 0.25}, {12, 0.5}}},
      {"one point per evaluated version: the latest row wins",
       {{0, 10, 8, 0.25}, {10, 11, 8, 0.375}, {20, 12, 8, 0.375}},
       {{8, 0.375}}},
      {"a row without eval_version adds nothing", {{0, 10, std::nullopt, 0.5}}, {}},
      {"a row without version still has its eval point", {{0, std::nullopt, 3, 0.5}}, {{3, 0.5}}},
      {"a row without accuracy adds nothing",
       {{0, 10, 6, std::nullopt}, {10, 11, 7, 0.5}},
       {{7, 0.5}}},
      {"points by increasing evaluated version",
       {{0, 20, 9, 0.5}, {10, 21, 2, 0.25}},
       {{2, 0.25}, {9, 0.5}}},
  };
  for (const Case& c : cases) {
    std::vector<ProgressRow> rows;
    for (const EvalSample& s : c.samples) {
      ProgressRow r;
      r.t = s.t;
      r.trainer = "tiny";
      r.version = s.version;
      r.eval_version = s.eval_version;
      r.eval_accuracy = s.accuracy;
      rows.push_back(r);
    }
    const std::optional<Points> got = SeriesPoints(BuildPanels(rows)[0], "eval accuracy");
    if (c.want.empty()) {
      EXPECT_FALSE(got.has_value()) << c.name;
    } else {
      EXPECT_EQ(got, c.want) << c.name;
    }
  }
}

TEST(PlotPanelsTest, EachTrainerHasItsOwnPointPerVersion) {
  std::vector<ProgressRow> rows;
  for (int i = 0; i < 4; ++i) {
    ProgressRow r;
    r.t = 10 * i;
    r.trainer = i % 2 == 0 ? "a" : "b";
    r.version = 3;  // Both trainers at version 3: one point each, not one between them.
    r.reward_mean = i;
    rows.push_back(r);
  }
  const std::vector<PlotPanel> panels = BuildPanels(rows);
  EXPECT_EQ(SeriesPoints(panels[0], "a reward mean"), (Points{{3, 2}}));
  EXPECT_EQ(SeriesPoints(panels[0], "b reward mean"), (Points{{3, 3}}));
}

TEST(SvgPlotTest, StructureAndWellFormedness) {
  SvgOptions options;
  options.title = "sluice experiment tiny";
  const std::string svg = RenderSvg(BuildPanels(Rows()), options);
  EXPECT_TRUE(WellFormed(svg)) << svg;
  EXPECT_EQ(svg.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=", 0), 0u);
  EXPECT_EQ(Count(svg, "<g class=\"panel\">"), 4u);
  // reward, eval, rollout, eu, us; staleness has no data.
  std::vector<std::string> lines = Polylines(svg);
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(Count(lines[0], ","), 5u);  // Five points.
  EXPECT_EQ(Count(lines[1], ","), 3u);
  EXPECT_EQ(Count(svg, "no data"), 1u);
  for (const char* text :
       {"Reward and eval accuracy", "Throughput (tokens/s)", "Replicas per region",
        "Staleness mean", ">reward mean<", ">eval accuracy<", ">rollout<", ">eu<", ">us<",
        ">version<", "sluice experiment tiny"}) {
    EXPECT_NE(svg.find(text), std::string::npos) << text;
  }
  EXPECT_EQ(svg.find(">seconds<"), std::string::npos);
  // Min/max tick labels of the first panel: x (versions) 0..40, y 0..0.5.
  EXPECT_NE(svg.find(">40</text>"), std::string::npos);
  EXPECT_NE(svg.find(">0.5</text>"), std::string::npos);
}

TEST(SvgPlotTest, ScalesAKnownSeriesOntoThePlotArea) {
  SvgOptions options;  // 1000 x 700.
  const PlotArea area = PanelPlotArea(0, 4, options);
  EXPECT_EQ(area.left, 70);
  EXPECT_EQ(area.top, 40 + 30);
  EXPECT_EQ(area.width, 500 - 70 - 20);
  EXPECT_EQ(area.height, 330 - 30 - 40);
  const PlotArea fourth = PanelPlotArea(3, 4, options);
  EXPECT_EQ(fourth.left, 570);
  EXPECT_EQ(fourth.top, 40 + 330 + 30);

  PlotPanel panel;
  panel.title = "t";
  panel.series.push_back({"line", {{0, 0}, {5, 5}, {10, 10}}});
  const std::string svg = RenderSvg({panel}, options);  // One panel: one row of 660.
  const PlotArea one = PanelPlotArea(0, 1, options);
  EXPECT_EQ(one.height, 660 - 30 - 40);
  // x: 70 + x/10*410; y: 70 + 590 - y/10*590.
  EXPECT_EQ(Polylines(svg), (std::vector<std::string>{"70.0,660.0 275.0,365.0 480.0,70.0"}));

  // A constant series is drawn in the middle; a single point too.
  panel.series = {{"flat", {{0, 3}, {4, 3}}}};
  EXPECT_EQ(Polylines(RenderSvg({panel}, options)),
            (std::vector<std::string>{"70.0,365.0 480.0,365.0"}));
}

TEST(SvgPlotTest, EmptySeriesSkippedAndTextEscaped) {
  PlotPanel panel;
  panel.title = "R&D <\"quotes\"> 'x'";
  panel.series.push_back({"missing", {}});
  panel.series.push_back({"a<b", {{0, 1}, {1, 2}}});
  const std::string svg = RenderSvg({panel}, SvgOptions{});
  EXPECT_TRUE(WellFormed(svg)) << svg;
  EXPECT_EQ(Polylines(svg).size(), 1u);
  EXPECT_EQ(svg.find("missing"), std::string::npos);
  EXPECT_NE(svg.find("R&amp;D &lt;&quot;quotes&quot;&gt; &apos;x&apos;"), std::string::npos);
  EXPECT_NE(svg.find(">a&lt;b<"), std::string::npos);
  EXPECT_EQ(EscapeXml("a&b<c>d\"e'f"), "a&amp;b&lt;c&gt;d&quot;e&apos;f");
  // A panel whose only series has no points says "no data".
  panel.series.pop_back();
  EXPECT_NE(RenderSvg({panel}, SvgOptions{}).find("no data"), std::string::npos);
}

class PlotFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Normalized, as the commands print it.
    root_ = AbsolutePath(::testing::TempDir() + "/sluice_plot_" + std::to_string(getpid()), "/");
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_ + "/bin");
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  std::string root_;
};

TEST_F(PlotFilesTest, FindInPathAndFormatChoice) {
  const std::string fake = root_ + "/bin/gnuplot";
  { std::ofstream(fake) << "#!/bin/sh\n"; }
  EXPECT_FALSE(FindInPath("gnuplot", root_ + "/none:/nonexistent").has_value());
  EXPECT_FALSE(FindInPath("gnuplot", root_ + "/bin").has_value());  // Not executable yet.
  chmod(fake.c_str(), 0755);
  EXPECT_EQ(FindInPath("gnuplot", "/nonexistent:" + root_ + "/bin"), fake);
  EXPECT_FALSE(FindInPath("bin/gnuplot", root_).has_value());

  EXPECT_EQ(*ChoosePlotFormat(PlotFormat::kAuto, "", false), PlotFormat::kSvg);
  EXPECT_EQ(*ChoosePlotFormat(PlotFormat::kAuto, "", true), PlotFormat::kPng);
  EXPECT_EQ(*ChoosePlotFormat(PlotFormat::kAuto, "x.svg", true), PlotFormat::kSvg);
  EXPECT_EQ(*ChoosePlotFormat(PlotFormat::kSvg, "x.png", true), PlotFormat::kSvg);
  EXPECT_FALSE(ChoosePlotFormat(PlotFormat::kAuto, "x.png", false).ok());
  Result<PlotFormat> png = ChoosePlotFormat(PlotFormat::kPng, "", false);
  ASSERT_FALSE(png.ok());
  EXPECT_NE(png.status().message().find("gnuplot"), std::string::npos);
}

TEST(GnuplotTest, Script) {
  std::vector<PlotPanel> panels = BuildPanels(Rows());
  std::vector<std::vector<std::string>> files(4);
  for (size_t i = 0; i < 4; ++i) {
    for (size_t j = 0; j < panels[i].series.size(); ++j) {
      files[i].push_back("/tmp/p" + std::to_string(i) + "s" + std::to_string(j));
    }
  }
  const std::string script = GnuplotScript(panels, files, "/o/it's.png", "pngcairo", "exp");
  EXPECT_EQ(script.rfind("set terminal pngcairo size 1200,800\nset output '/o/it''s.png'\n", 0),
            0u);
  EXPECT_NE(script.find("set multiplot layout 2,2 title 'exp'"), std::string::npos);
  EXPECT_NE(script.find("plot '/tmp/p0s0' using 1:2 with lines lw 2 title 'reward mean', "
                        "'/tmp/p0s1' using 1:2 with lines lw 2 title 'eval accuracy'\n"),
            std::string::npos);
  EXPECT_EQ(Count(script, "set title "), 4u);
  EXPECT_EQ(Count(script, "set xlabel 'version'\n"), 4u);
  EXPECT_EQ(script.find("seconds"), std::string::npos);
  EXPECT_EQ(Count(script, "NaN notitle"), 1u);  // The staleness panel has no data.
  EXPECT_NE(script.find("unset multiplot"), std::string::npos);
  EXPECT_EQ(GnuplotQuote("a'b"), "'a''b'");
}

TEST_F(PlotFilesTest, CommandWritesSvgWithoutGnuplotAndNamesAMissingLog) {
  const StateLayout layout(root_ + "/state");
  PlotOptions options;
  options.experiment = "tiny";
  options.state_dir = layout.root();
  options.search_path = root_ + "/bin";  // No gnuplot there.
  std::ostringstream out, err;
  EXPECT_EQ(RunPlot(options, out, err), 1);
  EXPECT_NE(err.str().find(layout.ProgressLog("tiny") + " does not exist"), std::string::npos)
      << err.str();

  ASSERT_TRUE(AppendProgress(layout.ProgressLog("tiny"), Rows()).ok());
  out.str("");
  err.str("");
  EXPECT_EQ(RunPlot(options, out, err), 0) << err.str();
  const std::string svg_path = layout.ExperimentDir("tiny") + "/progress.svg";
  EXPECT_EQ(out.str(), svg_path + "\n");
  std::ifstream file(svg_path);
  std::ostringstream text;
  text << file.rdbuf();
  EXPECT_TRUE(WellFormed(text.str()));
  EXPECT_EQ(Polylines(text.str()).size(), 5u);

  // --format png without gnuplot is an error; --output picks the place.
  options.format = PlotFormat::kPng;
  EXPECT_EQ(RunPlot(options, out, err), 1);
  options.format = PlotFormat::kAuto;
  options.output = root_ + "/elsewhere/plot.svg";
  out.str("");
  EXPECT_EQ(RunPlot(options, out, err), 0);
  EXPECT_EQ(out.str(), options.output + "\n");
  EXPECT_TRUE(std::filesystem::exists(options.output));
}

TEST(PlotFlagsTest, Parse) {
  const config::Environment env = {{"HOME", "/h"}, {"PATH", "/a:/b"}};
  Result<Parsed<PlotOptions>> p = ParsePlot({"tiny"}, env);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->options->experiment, "tiny");
  EXPECT_EQ(p->options->state_dir, "/h/.sluice");
  EXPECT_EQ(p->options->format, PlotFormat::kAuto);
  EXPECT_EQ(p->options->search_path, "/a:/b");
  p = ParsePlot({"tiny", "--format", "svg", "-o", "x.svg"}, env);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->options->format, PlotFormat::kSvg);
  EXPECT_EQ(p->options->output, "x.svg");
  EXPECT_EQ(ParsePlot({"tiny", "--format", "gif"}, env).status().message(),
            "flag --format: \"gif\" is not one of png, svg, auto");
  EXPECT_FALSE(ParsePlot({}, env).ok());
  EXPECT_FALSE(ParsePlot({"a", "b"}, env).ok());
  EXPECT_FALSE(ParsePlot({"a/b"}, env).ok());
}

}  // namespace
}  // namespace sluice::cli
