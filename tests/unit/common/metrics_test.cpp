#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/metrics/callback_family.h"
#include "common/metrics/counter.h"
#include "common/metrics/exposition.h"
#include "common/metrics/family.h"
#include "common/metrics/gauge.h"
#include "common/metrics/histogram.h"
#include "common/metrics/names.h"
#include "common/metrics/registry.h"
#include "tests/unit/common/promtool_check.h"

namespace sluice::metrics {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

TEST(MetricsExpositionTest, SmallRegistryExactText) {
  Registry registry;
  auto& requests = registry.AddCounter("sluice_http_requests_total", "HTTP requests served.",
                                       {"method", "code"});
  requests.WithLabels({"POST", "500"}).Inc();
  requests.WithLabels({"GET", "200"}).Inc(3);
  registry.AddGauge("sluice_queue_depth", "Items waiting.\nSecond line, with \\ and \"quotes\".")
      .WithLabels({})
      .Set(2.5);
  auto& latency = registry.AddHistogram("sluice_request_duration_seconds", "Request latency.",
                                        {"route"}, {0.125, 0.5, 1});
  auto& route_a = latency.WithLabels({"/a"});
  for (double v : {0.0625, 0.125, 0.75, 3.0}) route_a.Observe(v);
  registry.AddGauge("sluice_tricky_info", "Tricky label values.", {"value"})
      .WithLabels({"back\\slash \"quoted\"\nnew line"})
      .Set(1);
  // Labelled families without children are left out.
  registry.AddCounter("sluice_unused_total", "Never incremented.", {"kind"});

  EXPECT_EQ(ExposeText(registry),
            "# HELP sluice_http_requests_total HTTP requests served.\n"
            "# TYPE sluice_http_requests_total counter\n"
            "sluice_http_requests_total{method=\"GET\",code=\"200\"} 3\n"
            "sluice_http_requests_total{method=\"POST\",code=\"500\"} 1\n"
            "# HELP sluice_queue_depth Items waiting.\\nSecond line, with \\\\ and \"quotes\".\n"
            "# TYPE sluice_queue_depth gauge\n"
            "sluice_queue_depth 2.5\n"
            "# HELP sluice_request_duration_seconds Request latency.\n"
            "# TYPE sluice_request_duration_seconds histogram\n"
            "sluice_request_duration_seconds_bucket{route=\"/a\",le=\"0.125\"} 2\n"
            "sluice_request_duration_seconds_bucket{route=\"/a\",le=\"0.5\"} 2\n"
            "sluice_request_duration_seconds_bucket{route=\"/a\",le=\"1\"} 3\n"
            "sluice_request_duration_seconds_bucket{route=\"/a\",le=\"+Inf\"} 4\n"
            "sluice_request_duration_seconds_sum{route=\"/a\"} 3.9375\n"
            "sluice_request_duration_seconds_count{route=\"/a\"} 4\n"
            "# HELP sluice_tricky_info Tricky label values.\n"
            "# TYPE sluice_tricky_info gauge\n"
            "sluice_tricky_info{value=\"back\\\\slash \\\"quoted\\\"\\nnew line\"} 1\n");
}

TEST(MetricsExpositionTest, UnlabelledHistogramAndCallbacks) {
  Registry registry;
  registry.AddHistogram("sluice_batch_size_bytes", "Batch sizes.", {}, {1024})
      .WithLabels({})
      .Observe(2048);
  int depth = 7;
  auto& queue = registry.AddCallbackGauge("sluice_workqueue_depth", "Items queued.", {"name"});
  queue.Set({"leases"}, [&depth] { return static_cast<double>(depth); });
  registry.AddCallbackCounter("sluice_process_cpu_seconds_total", "CPU time used.").Set({}, [] {
    return 1.5;
  });

  const std::string expected_head =
      "# HELP sluice_batch_size_bytes Batch sizes.\n"
      "# TYPE sluice_batch_size_bytes histogram\n"
      "sluice_batch_size_bytes_bucket{le=\"1024\"} 0\n"
      "sluice_batch_size_bytes_bucket{le=\"+Inf\"} 1\n"
      "sluice_batch_size_bytes_sum 2048\n"
      "sluice_batch_size_bytes_count 1\n"
      "# HELP sluice_process_cpu_seconds_total CPU time used.\n"
      "# TYPE sluice_process_cpu_seconds_total counter\n"
      "sluice_process_cpu_seconds_total 1.5\n";
  EXPECT_EQ(ExposeText(registry), expected_head +
                                      "# HELP sluice_workqueue_depth Items queued.\n"
                                      "# TYPE sluice_workqueue_depth gauge\n"
                                      "sluice_workqueue_depth{name=\"leases\"} 7\n");
  // Computed at scrape time.
  depth = 9;
  EXPECT_NE(ExposeText(registry).find("sluice_workqueue_depth{name=\"leases\"} 9\n"),
            std::string::npos);
  EXPECT_TRUE(queue.Remove({"leases"}));
  EXPECT_FALSE(queue.Remove({"leases"}));
  EXPECT_EQ(ExposeText(registry), expected_head);
}

TEST(MetricsExpositionTest, InvalidUtf8IsReplaced) {
  Registry registry;
  registry.AddGauge("sluice_bytes_info", "Help with bad \xff byte.", {"v"})
      .WithLabels({"a\xc3(b\xe2\x82\xac"})  // Broken 2-byte sequence, then a valid euro sign.
      .Set(1);
  EXPECT_EQ(ExposeText(registry),
            "# HELP sluice_bytes_info Help with bad \xEF\xBF\xBD byte.\n"
            "# TYPE sluice_bytes_info gauge\n"
            "sluice_bytes_info{v=\"a\xEF\xBF\xBD(b\xe2\x82\xac\"} 1\n");
}

TEST(MetricsExpositionTest, ContentType) {
  EXPECT_EQ(kTextContentType, "text/plain; version=0.0.4; charset=utf-8");
}

TEST(MetricsFormatValueTest, SpecialValues) {
  EXPECT_EQ(FormatValue(kInf), "+Inf");
  EXPECT_EQ(FormatValue(-kInf), "-Inf");
  EXPECT_EQ(FormatValue(kNaN), "NaN");
  EXPECT_EQ(FormatValue(0), "0");
  EXPECT_EQ(FormatValue(3), "3");
  EXPECT_EQ(FormatValue(-2.5), "-2.5");
  EXPECT_EQ(FormatValue(0.1), "0.1");
  EXPECT_EQ(FormatValue(1e6), "1e+06");
  EXPECT_EQ(FormatValue(1e-9), "1e-09");
}

TEST(MetricsFormatValueTest, RoundTrips) {
  std::mt19937_64 rng(42);
  for (int i = 0; i < 100000; ++i) {
    uint64_t bits = rng();
    double v;
    std::memcpy(&v, &bits, sizeof(v));
    if (!std::isfinite(v)) continue;
    const std::string text = FormatValue(v);
    EXPECT_EQ(std::strtod(text.c_str(), nullptr), v) << text;
  }
  for (double v : {0.1, 1.0 / 3, 123456789.123456789, 5e-324, 1.7976931348623157e308}) {
    EXPECT_EQ(std::strtod(FormatValue(v).c_str(), nullptr), v);
  }
}

TEST(MetricsCounterTest, OnlyGoesUp) {
  Counter counter;
  counter.Inc();
  counter.Inc(2.5);
  counter.Inc(-1);    // Ignored.
  counter.Inc(kNaN);  // Ignored.
  counter.Inc(0);
  EXPECT_EQ(counter.Value(), 3.5);
}

TEST(MetricsGaugeTest, SetIncDec) {
  Gauge gauge;
  gauge.Set(10);
  gauge.Inc();
  gauge.Inc(4);
  gauge.Dec();
  gauge.Dec(20);
  EXPECT_EQ(gauge.Value(), -6);
}

TEST(MetricsHistogramTest, BucketsAreInclusiveUpperBounds) {
  Histogram h({1, 2, 4});
  for (double v : {-5.0, 1.0, 1.5, 2.0, 4.0, 4.5, kInf, kNaN}) h.Observe(v);
  const HistogramSnapshot s = h.Snapshot();
  EXPECT_EQ(s.upper_bounds, (std::vector<double>{1, 2, 4}));
  EXPECT_EQ(s.cumulative_counts, (std::vector<uint64_t>{2, 4, 5, 7}));
  EXPECT_EQ(s.count, 7u);  // NaN ignored.
  EXPECT_EQ(s.sum, kInf);
}

TEST(MetricsHistogramTest, BucketHelpers) {
  EXPECT_EQ(ExponentialBuckets(0.001, 10, 4), (std::vector<double>{0.001, 0.01, 0.1, 1.0}));
  EXPECT_EQ(ExponentialBuckets(1, 2, 5), (std::vector<double>{1, 2, 4, 8, 16}));
  EXPECT_EQ(LinearBuckets(0, 0.25, 4), (std::vector<double>{0, 0.25, 0.5, 0.75}));
  EXPECT_EQ(LinearBuckets(-1, 1, 3), (std::vector<double>{-1, 0, 1}));
  EXPECT_TRUE(ValidateBuckets(ExponentialBuckets(0.0005, 2, 20)).ok());
  EXPECT_TRUE(ValidateBuckets(LinearBuckets(0.1, 0.1, 50)).ok());
}

TEST(MetricsHistogramTest, ValidateBuckets) {
  EXPECT_TRUE(ValidateBuckets({}).ok());
  EXPECT_TRUE(ValidateBuckets({-1, 0, 0.5}).ok());
  const Status repeated = ValidateBuckets({1, 2, 2});
  EXPECT_EQ(repeated.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(repeated.field(), "buckets[2]");
  EXPECT_EQ(ValidateBuckets({2, 1}).field(), "buckets[1]");
  EXPECT_EQ(ValidateBuckets({1, kInf}).field(), "buckets[1]");
  EXPECT_EQ(ValidateBuckets({kNaN}).field(), "buckets[0]");
}

TEST(MetricNamesTest, DataModelRules) {
  EXPECT_TRUE(IsValidMetricName("sluice_x"));
  EXPECT_TRUE(IsValidMetricName("_x:y9"));
  EXPECT_TRUE(IsValidMetricName("X"));
  EXPECT_FALSE(IsValidMetricName(""));
  EXPECT_FALSE(IsValidMetricName("9x"));
  EXPECT_FALSE(IsValidMetricName("a-b"));
  EXPECT_FALSE(IsValidMetricName("a b"));
  EXPECT_FALSE(IsValidMetricName("caf\xc3\xa9"));
  EXPECT_TRUE(IsValidLabelName("method"));
  EXPECT_TRUE(IsValidLabelName("_x9"));
  EXPECT_FALSE(IsValidLabelName(""));
  EXPECT_FALSE(IsValidLabelName("__name__"));
  EXPECT_FALSE(IsValidLabelName("a:b"));
  EXPECT_FALSE(IsValidLabelName("1a"));
}

// The error for registering a counter family with these arguments.
Status CounterError(std::string_view name, std::vector<std::string> labels = {},
                    std::string_view help = "Help.") {
  Registry registry;
  return registry.TryAddCounter(name, help, std::move(labels)).status();
}

TEST(MetricsRegistryTest, RejectsBadNames) {
  for (const char* bad :
       {"", "9_total", "sluice-x_total", "sluice:x_total", "sluice_Requests_total", "sluice_x"}) {
    const Status s = CounterError(bad);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(s.field(), "name") << bad;
    EXPECT_NE(s.message().find(std::string("\"") + bad + "\""), std::string::npos) << s.ToString();
  }
  EXPECT_EQ(CounterError("sluice_x").message(), "counter name \"sluice_x\" must end in \"_total\"");

  Registry registry;
  EXPECT_EQ(registry.TryAddGauge("sluice_items_total", "Help.").status().field(), "name");
  for (const char* reserved : {"sluice_x_bucket", "sluice_x_sum", "sluice_x_count"}) {
    EXPECT_EQ(registry.TryAddGauge(reserved, "Help.").status().code(),
              StatusCode::kInvalidArgument);
    EXPECT_FALSE(registry.TryAddHistogram(reserved, "Help.", {}, {1}).ok());
  }
  EXPECT_EQ(CounterError("sluice_x_total", {}, "").field(), "help");
}

TEST(MetricsRegistryTest, RejectsBadLabelNames) {
  EXPECT_EQ(CounterError("sluice_x_total", {"ok", "__reserved"}).field(), "label_names[1]");
  EXPECT_EQ(CounterError("sluice_x_total", {"9a"}).field(), "label_names[0]");
  EXPECT_EQ(CounterError("sluice_x_total", {"a-b"}).field(), "label_names[0]");
  EXPECT_EQ(CounterError("sluice_x_total", {"camelCase"}).field(), "label_names[0]");
  EXPECT_EQ(CounterError("sluice_x_total", {"le"}).field(), "label_names[0]");
  EXPECT_EQ(CounterError("sluice_x_total", {"quantile"}).field(), "label_names[0]");
  const Status repeated = CounterError("sluice_x_total", {"a", "b", "a"});
  EXPECT_EQ(repeated.field(), "label_names[2]");
  EXPECT_EQ(repeated.message(), "label name \"a\" is repeated (metric \"sluice_x_total\")");
}

TEST(MetricsRegistryTest, RejectsBadBuckets) {
  Registry registry;
  const Status s = registry.TryAddHistogram("sluice_x_seconds", "Help.", {}, {0.1, 0.05}).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.field(), "buckets[1]");
  EXPECT_EQ(s.message(), "metric \"sluice_x_seconds\": bucket bounds must be strictly increasing");
}

TEST(MetricsRegistryTest, ReRegistration) {
  Registry registry;
  auto first = registry.TryAddCounter("sluice_x_total", "Help.", {"a"});
  ASSERT_TRUE(first.ok());
  // Identical: the same family.
  auto again = registry.TryAddCounter("sluice_x_total", "Help.", {"a"});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*first, *again);

  const Status labels = registry.TryAddCounter("sluice_x_total", "Help.", {"b"}).status();
  EXPECT_EQ(labels.code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(labels.message(),
            "metric \"sluice_x_total\" is already registered as a counter with labels [a]; "
            "cannot register it as a counter with labels [b]");
  EXPECT_EQ(registry.TryAddCallbackCounter("sluice_x_total", "Help.", {"a"}).status().code(),
            StatusCode::kAlreadyExists);
  EXPECT_EQ(registry.TryAddCounter("sluice_x_total", "Other help.", {"a"}).status().message(),
            "metric \"sluice_x_total\" is already registered with different help text");

  ASSERT_TRUE(registry.TryAddGauge("sluice_y", "Help.").ok());
  EXPECT_EQ(registry.TryAddHistogram("sluice_y", "Help.", {}, {1}).status().message(),
            "metric \"sluice_y\" is already registered as a gauge with labels []; cannot "
            "register it as a histogram with labels []");

  ASSERT_TRUE(registry.TryAddHistogram("sluice_z_seconds", "Help.", {}, {1, 2}).ok());
  EXPECT_TRUE(registry.TryAddHistogram("sluice_z_seconds", "Help.", {}, {1, 2}).ok());
  EXPECT_EQ(registry.TryAddHistogram("sluice_z_seconds", "Help.", {}, {1, 3}).status().message(),
            "metric \"sluice_z_seconds\" is already registered with different buckets");
}

TEST(MetricsRegistryTest, ChildReferencesStayValid) {
  Registry registry;
  auto& family = registry.AddGauge("sluice_x", "Help.", {"i"});
  Gauge& first = family.WithLabels({"0"});
  first.Set(42);
  for (int i = 1; i < 1000; ++i) family.WithLabels({std::to_string(i)}).Set(i);
  EXPECT_EQ(&family.WithLabels({"0"}), &first);
  EXPECT_EQ(first.Value(), 42);
  // Children come out sorted by label values (as strings).
  const std::vector<FamilySnapshot> snapshots = registry.Collect();
  ASSERT_EQ(snapshots.size(), 1u);
  ASSERT_EQ(snapshots[0].children.size(), 1000u);
  EXPECT_EQ(snapshots[0].children[1].label_values, std::vector<std::string>{"1"});
  EXPECT_EQ(snapshots[0].children[2].label_values, std::vector<std::string>{"10"});
}

TEST(MetricsRegistryDeathTest, ProgrammingErrorsAbort) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Registry registry;
  auto& family = registry.AddCounter("sluice_x_total", "Help.", {"a", "b"});
  EXPECT_DEATH(family.WithLabels({"only one"}), "sluice_x_total: 1 label values given for 2");
  EXPECT_DEATH(registry.AddCounter("sluice_bad", "Help."), "must end in \"_total\"");
  auto& callbacks = registry.AddCallbackGauge("sluice_cb", "Help.", {"a"});
  EXPECT_DEATH(callbacks.Set({}, [] { return 1.0; }), "sluice_cb: 0 label values given for 1");
}

TEST(MetricsConcurrencyTest, ExactTotalsWhileScraping) {
  Registry registry;
  auto& counter = registry.AddCounter("sluice_ops_total", "Ops.", {"worker"});
  auto& shared = registry.AddCounter("sluice_shared_ops_total", "Ops.").WithLabels({});
  auto& gauge = registry.AddGauge("sluice_in_flight", "In flight.").WithLabels({});
  auto& histogram =
      registry.AddHistogram("sluice_op_duration_seconds", "Latency.", {}, {1, 2}).WithLabels({});
  constexpr int kThreads = 4;
  constexpr int kIterations = 50000;
  std::atomic<bool> done{false};
  std::thread scraper([&] {
    while (!done.load()) {
      const std::string text = ExposeText(registry);
      EXPECT_FALSE(text.empty());
    }
  });
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([&, t] {
      // Each worker also creates its own child concurrently with the others.
      Counter& mine = counter.WithLabels({std::to_string(t % 2)});
      for (int i = 0; i < kIterations; ++i) {
        mine.Inc();
        shared.Inc(0.5);
        gauge.Inc();
        histogram.Observe(i % 3);  // 0, 1 or 2: an exact sum.
        gauge.Dec();
      }
    });
  }
  for (auto& w : workers) w.join();
  done = true;
  scraper.join();

  EXPECT_EQ(counter.WithLabels({"0"}).Value(), kThreads / 2 * kIterations);
  EXPECT_EQ(counter.WithLabels({"1"}).Value(), kThreads / 2 * kIterations);
  EXPECT_EQ(shared.Value(), 0.5 * kThreads * kIterations);
  EXPECT_EQ(gauge.Value(), 0);
  const HistogramSnapshot h = histogram.Snapshot();
  EXPECT_EQ(h.count, static_cast<uint64_t>(kThreads) * kIterations);
  double expected_sum = 0;
  for (int i = 0; i < kIterations; ++i) expected_sum += i % 3;
  EXPECT_EQ(h.sum, expected_sum * kThreads);
}

TEST(MetricsConcurrencyTest, RegisterAndRemoveCallbacksWhileScraping) {
  Registry registry;
  auto& depth = registry.AddCallbackGauge("sluice_queue_depth", "Depth.", {"queue"});
  std::atomic<bool> done{false};
  std::thread scraper([&] {
    while (!done.load()) (void)ExposeText(registry);
  });
  for (int i = 0; i < 2000; ++i) {
    auto value = std::make_shared<int>(i);
    depth.Set({std::to_string(i % 7)}, [value] { return static_cast<double>(*value); });
    if (i % 3 == 0) depth.Remove({std::to_string(i % 7)});
    registry.AddCounter("sluice_dynamic_total", "Created while scraping.", {"i"})
        .WithLabels({std::to_string(i)})
        .Inc();
  }
  done = true;
  scraper.join();
}

// A registry shaped like a real controller's, for promtool.
std::string RealisticExposition() {
  Registry registry;
  auto& requests = registry.AddCounter("sluice_apiserver_requests_total",
                                       "Requests sent to the Kubernetes API server.",
                                       {"verb", "resource", "code"});
  requests.WithLabels({"GET", "pods", "200"}).Inc(1234);
  requests.WithLabels({"PATCH", "dataflows", "409"}).Inc(3);
  requests.WithLabels({"WATCH", "leases", "200"}).Inc(17);
  auto& latency = registry.AddHistogram("sluice_apiserver_request_duration_seconds",
                                        "Latency of API server requests.", {"verb"},
                                        ExponentialBuckets(0.001, 2, 15));
  std::mt19937 rng(7);
  std::exponential_distribution<double> seconds(20);
  for (const char* verb : {"GET", "PATCH", "WATCH"}) {
    auto& h = latency.WithLabels({verb});
    for (int i = 0; i < 500; ++i) h.Observe(seconds(rng));
  }
  auto& sent =
      registry.AddCounter("sluice_rpc_sent_bytes_total", "Bytes sent to workers.", {"worker"});
  sent.WithLabels({"worker-0"}).Inc(1e9);
  sent.WithLabels({"worker-1"}).Inc(3.5e6);
  registry.AddGauge("sluice_leases_held", "Leases currently held by this replica.")
      .WithLabels({})
      .Set(3);
  auto& depth = registry.AddCallbackGauge("sluice_workqueue_depth",
                                          "Items waiting in a work queue.", {"name"});
  depth.Set({"dataflow"}, [] { return 12.0; });
  depth.Set({"policy \"p1\"\\weird\nname"}, [] { return 0.0; });
  registry.AddCallbackCounter("sluice_process_cpu_seconds_total", "User and system CPU time.")
      .Set({}, [] { return 12.25; });
  auto& temperature = registry.AddGauge("sluice_scheduler_pressure_ratio",
                                        "Odd values: infinities and NaN.\nSecond line.", {"case"});
  temperature.WithLabels({"pos_inf"}).Set(kInf);
  temperature.WithLabels({"neg_inf"}).Set(-kInf);
  temperature.WithLabels({"nan"}).Set(kNaN);
  temperature.WithLabels({"tiny"}).Set(1e-300);
  auto& sizes = registry.AddHistogram("sluice_batch_size_bytes", "Sizes of batches.", {},
                                      LinearBuckets(1024, 1024, 8));
  for (int i = 0; i < 100; ++i) sizes.WithLabels({}).Observe(i * 97.0);
  return ExposeText(registry);
}

TEST(MetricsPromtoolTest, RealisticExpositionPassesCheckMetrics) {
  const std::string text = RealisticExposition();
  const test_support::PromtoolCheck check = test_support::RunPromtoolCheckMetrics(text);
  ASSERT_TRUE(check.available)
      << "promtool is not on PATH (make deps installs Debian's prometheus)";
  EXPECT_TRUE(check.passed) << check.output << "\n--- input ---\n" << text;
}

}  // namespace
}  // namespace sluice::metrics
