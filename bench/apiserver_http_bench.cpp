// Benchmarks of the local API server (localcluster/apiserver) over real HTTP: an in-process
// ApiServer on SqliteStorage, driven on loopback by sluice::http::Client with keep-alive. The
// baseline, measured in the same run, is the same writes and lists made straight on the storage,
// so the report gives the HTTP (and handler) overhead as a ratio.
//
//   writes    ConfigMap creates/s and updates/s (PUT with resourceVersion), 1 and N clients
//   list      p50/p99 latency of listing --objects ConfigMaps in one namespace: whole, paged by
//             500 to the end, with a label selector matching 1%, and as a Table
//   fan-out   --watchers watch streams while one writer updates: latency from each write until
//             every watcher has it, events/s delivered; every watcher must get every event.
//             Watchers connect one at a time (the server's listen backlog is 5)
//
// Flags: --quick (smoke run), --objects N, --single N, --clients N, --watchers N, --writes N,
// --reps N. Exits non-zero when a request fails or a watcher misses an event.
//
// Links: sluice_apiserver_core, Threads.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "bench/bench_support.h"
#include "common/clock.h"
#include "common/http/bearer_token.h"
#include "common/http/client.h"
#include "common/logging/logger.h"
#include "common/metrics/registry.h"
#include "common/process/cancellation.h"
#include "localcluster/apiserver/api_server.h"
#include "localcluster/apiserver/sqlite_storage.h"

namespace sluice::apiserver {
namespace {

using bench::BenchClock;
using bench::Check;
using bench::Expect;
using bench::Fail;
using bench::Percentile;
using bench::Seconds;
using bench::TempPath;
using nlohmann::json;

constexpr char kToken[] = "bench-token";
constexpr char kJson[] = "application/json";
constexpr char kTableAccept[] = "application/json;as=Table;v=v1;g=meta.k8s.io";

struct Config {
  int objects = 10000;     // Created by the concurrent clients; the list namespace's size.
  int single = 2000;       // Created and updated by the single client.
  int clients = 8;         // Concurrent clients (threads).
  int watchers = 100;      // Watch streams in the fan-out.
  int writes = 2000;       // Updates made during the unpaced fan-out.
  int reps = 20;           // Timed runs per list variant.
  int paced_writes = 100;  // Updates at kPacedRate during the paced fan-out.
};

constexpr double kPacedRate = 50;  // Writes/s of the paced fan-out.

// The value of the first `"field":"value"` in `text` from `from`; "" when absent. Lets the
// clients read resourceVersion and continue without decoding whole responses, which would charge
// client-side JSON parsing to the server on this 2-core machine.
std::string StringField(std::string_view text, std::string_view field, size_t from = 0) {
  const std::string needle = "\"" + std::string(field) + "\":\"";
  const size_t at = text.find(needle, from);
  if (at == std::string_view::npos) return "";
  const size_t start = at + needle.size();
  const size_t end = text.find('"', start);
  if (end == std::string_view::npos) return "";
  return std::string(text.substr(start, end - start));
}

std::string QueryEscape(std::string_view s) {
  std::string out;
  for (const char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ||
        c == '~') {
      out += c;
    } else {
      char buf[4];
      std::snprintf(buf, sizeof(buf), "%%%02X", static_cast<unsigned char>(c));
      out += buf;
    }
  }
  return out;
}

// A ~0.8 KB ConfigMap; label shard takes 100 values, so shard=s7 selects 1%.
json ConfigMap(const std::string& ns, const std::string& name, int i) {
  std::string config = "# worker configuration\n";
  while (config.size() < 500) {
    config += "shard" + std::to_string(config.size()) + ": registry.example/sluice/worker:1.2.3\n";
  }
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata",
           {{"name", name},
            {"namespace", ns},
            {"labels", {{"app", "bench"}, {"shard", "s" + std::to_string(i % 100)}}}}},
          {"data", {{"config.yaml", config}, {"seq", std::to_string(i)}}}};
}

std::string Name(int i) { return "cm-" + std::to_string(i); }

std::string CollectionPath(const std::string& ns) {
  return "/api/v1/namespaces/" + ns + "/configmaps";
}

// Runs fn(thread, i) for i in [0, n), item i on thread i % threads; returns the wall seconds.
double Parallel(int threads, int n, const std::function<void(int, int)>& fn) {
  const auto t = BenchClock::now();
  std::vector<std::thread> pool;
  for (int th = 0; th < threads; ++th) {
    pool.emplace_back([&, th] {
      for (int i = th; i < n; i += threads) fn(th, i);
    });
  }
  for (std::thread& p : pool) p.join();
  return Seconds(t);
}

class TempDir {
 public:
  TempDir() {
    std::string pattern = "/tmp/sluice_http_bench_" + std::to_string(getpid()) + "_XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) Fail("mkdtemp");
    path_ = pattern;
    TempPath() = path_;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::unique_ptr<SqliteStorage> OpenStore(const std::string& path) {
  SqliteStorageOptions options;
  options.path = path;
  Result<std::unique_ptr<SqliteStorage>> store = SqliteStorage::Open(options);
  Check(store.status(), "open " + path);
  return std::move(store).value();
}

struct WriteRates {
  double creates = 0;
  double updates = 0;
};

// Creates then updates `n` ConfigMaps in `ns` over HTTP with `threads` clients sharing one pool.
WriteRates HttpWrites(http::Client& client, const std::string& ns, int n, int threads) {
  std::vector<std::string> bodies;
  for (int i = 0; i < n; ++i) bodies.push_back(ConfigMap(ns, Name(i), i).dump());
  std::vector<std::string> versions(n);
  const std::string collection = CollectionPath(ns);
  WriteRates rates;
  rates.creates = n / Parallel(threads, n, [&](int, int i) {
                    http::Response r =
                        Expect(client.Post(collection, bodies[i], kJson), 201, "create");
                    versions[i] = StringField(r.body, "resourceVersion");
                  });
  rates.updates =
      n / Parallel(threads, n, [&](int, int i) {
        json object = ConfigMap(ns, Name(i), i);
        object["metadata"]["resourceVersion"] = versions[i];
        object["data"]["seq"] = std::to_string(i + 1);
        Expect(client.Put(collection + "/" + Name(i), object.dump(), kJson), 200, "update");
      });
  return rates;
}

// The same writes straight on the storage (no HTTP, no handler).
WriteRates StorageWrites(Storage& store, const std::string& ns, int n, int threads) {
  std::vector<json> objects;
  for (int i = 0; i < n; ++i) objects.push_back(ConfigMap(ns, Name(i), i));
  std::vector<uint64_t> versions(n);
  auto key = [&](int i) { return ObjectKey{"core/configmaps", ns, Name(i)}; };
  WriteRates rates;
  rates.creates = n / Parallel(threads, n, [&](int, int i) {
                    Result<Stored> s = store.Create(key(i), objects[i]);
                    Check(s.status(), "storage create");
                    versions[i] = s->revision;
                  });
  rates.updates =
      n / Parallel(threads, n, [&](int, int i) {
        json object = objects[i];
        object["data"]["seq"] = std::to_string(i + 1);
        Check(store.Update(key(i), std::move(object), versions[i]).status(), "storage update");
      });
  return rates;
}

struct ListFigures {
  std::string what;
  double p50 = 0;
  double p99 = 0;
  size_t bytes = 0;  // Of one whole listing (all pages), as received.
  size_t requests = 0;
  std::string encoding;
};

// Times `reps` runs of one listing (following continue tokens to the end); the untimed first run
// is decoded and must hold `expect` items (or Table rows).
ListFigures TimeList(http::Client& client, const std::string& what, const std::string& path,
                     bool table, size_t expect, int reps) {
  auto run = [&](bool verify, ListFigures* fig) {
    std::string token;
    size_t items = 0;
    fig->bytes = 0;
    fig->requests = 0;
    do {
      http::Request req;
      req.path = path;
      if (!token.empty()) {
        req.path += (path.find('?') == std::string::npos ? "?" : "&");
        req.path += "continue=" + QueryEscape(token);
      }
      if (table) req.headers.emplace("Accept", kTableAccept);
      http::Response r = Expect(client.Send(std::move(req)), 200, "list " + what);
      fig->bytes += r.body.size();
      fig->encoding = r.Header("Content-Encoding");
      ++fig->requests;
      if (verify) {
        const json list = json::parse(r.body);
        items += list.at(table ? "rows" : "items").size();
        token = list["metadata"].value("continue", "");
      } else {
        // The list's metadata follows its items (keys are sorted): search from the end.
        const size_t meta = r.body.rfind("\"metadata\":{");
        token = meta == std::string::npos ? "" : StringField(r.body, "continue", meta);
      }
    } while (!token.empty());
    if (verify && items != expect) {
      Fail("list " + what + ": " + std::to_string(items) + " items, want " +
           std::to_string(expect));
    }
  };
  ListFigures fig;
  fig.what = what;
  run(true, &fig);
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    const auto t = BenchClock::now();
    run(false, &fig);
    ms.push_back(Seconds(t) * 1e3);
  }
  fig.p50 = Percentile(ms, 0.5);
  fig.p99 = Percentile(ms, 0.99);
  return fig;
}

// p50 ms of listing `ns` straight from the storage, pages of `limit` (0: one list) to the end.
double StorageListMs(Storage& store, const std::string& ns, size_t limit, int reps) {
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    const auto t = BenchClock::now();
    std::string token;
    do {
      Result<ListResult> page = store.List("core/configmaps", ns, limit, token);
      Check(page.status(), "storage list");
      token = page->continue_token;
    } while (!token.empty());
    ms.push_back(Seconds(t) * 1e3);
  }
  return Percentile(ms, 0.5);
}

struct FanOutFigures {
  double write_rate = 0;  // Writes/s the writer achieved.
  double delivered = 0;   // Events/s delivered, over all watchers.
  double all_p50 = 0;     // ms from a write's request until every watcher had it.
  double all_p99 = 0;
  double all_max = 0;
  double each_p50 = 0;  // ms from a write's request until one watcher had it (all pairs).
};

// `watchers` streams watch namespace `ns` from the current revision; one writer makes `writes`
// updates (at `rate` per second, 0: as fast as it can). Every watcher must see every write, in
// order, as a MODIFIED event carrying its sequence number.
FanOutFigures FanOut(http::Client& client, const std::string& ns, int watchers, int writes,
                     double rate) {
  // Each write changes the object (an unchanged PUT is no write and no event, as in kube).
  static int runs = 0;
  const std::string run = "run" + std::to_string(++runs) + "-";
  constexpr int kObjects = 10;
  std::vector<std::string> versions(kObjects);
  const std::string collection = CollectionPath(ns);
  for (int i = 0; i < kObjects; ++i) {
    http::Response r = Expect(client.Get(collection + "/" + Name(i)), 200, "get");
    versions[i] = StringField(r.body, "resourceVersion");
  }
  const http::Response list = Expect(client.Get(collection + "?limit=1"), 200, "list");
  const std::string from = json::parse(list.body)["metadata"].value("resourceVersion", "");

  // recv[w][i]: when watcher w received write i (ns since `epoch`; -1 not yet).
  const auto epoch = BenchClock::now();
  auto since_epoch = [&] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(BenchClock::now() - epoch).count();
  };
  std::vector<std::vector<int64_t>> recv(watchers, std::vector<int64_t>(writes, -1));
  std::vector<int64_t> sent(writes, -1);
  std::atomic<int> connected{0};
  std::atomic<int> finished{0};
  std::mutex errors_mu;
  std::vector<std::string> errors;
  CancellationSource stop;
  std::vector<std::thread> threads;
  const auto connect_deadline = BenchClock::now() + std::chrono::seconds(30);
  for (int w = 0; w < watchers; ++w) {
    threads.emplace_back([&, w] {
      std::string buffer;
      int next = 0;
      std::string error;
      http::Request req;
      req.path = collection + "?watch=1&resourceVersion=" + from;
      req.cancel = stop.Token();
      auto on_head = [&](const http::Response& head) {
        connected.fetch_add(1);
        return head.status == 200;
      };
      auto on_data = [&](std::string_view data) {
        buffer.append(data);
        size_t start = 0;
        for (size_t nl; (nl = buffer.find('\n', start)) != std::string::npos; start = nl + 1) {
          const std::string_view line(buffer.data() + start, nl - start);
          const int64_t at = since_epoch();
          if (StringField(line, "type") != "MODIFIED") {
            error = "unexpected event: " + std::string(line.substr(0, 200));
            return false;
          }
          const std::string seq = StringField(line, "seq");
          if (seq != run + std::to_string(next)) {
            error = "event " + seq + " where " + run + std::to_string(next) + " was due";
            return false;
          }
          recv[w][next++] = at;
          if (next == writes) return false;
        }
        buffer.erase(0, start);
        return true;
      };
      Result<http::Response> head = client.Stream(std::move(req), on_head, on_data);
      if (error.empty() && next < writes) {
        error =
            "stream ended after " + std::to_string(next) + " of " + std::to_string(writes) +
            " events: " +
            (head.ok() ? "HTTP " + std::to_string(head->status) + " " + head->body.substr(0, 200)
                       : head.status().ToString());
      }
      if (!error.empty()) {
        std::lock_guard<std::mutex> lock(errors_mu);
        errors.push_back("watcher " + std::to_string(w) + ": " + error);
      }
      finished.fetch_add(1);
    });
    // One watch at a time: the server's listen backlog is cpp-httplib's 5, and a burst of 100
    // connects overflows it; the dropped handshakes then stall for up to 30 s (see
    // docs/benchmarks.md). This measures fan-out, not connection storms.
    while (connected.load() + finished.load() <= w && BenchClock::now() < connect_deadline) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
  if (connected.load() < watchers) {
    const int started = connected.load();
    stop.Cancel();
    for (std::thread& t : threads) t.join();
    for (const std::string& e : errors) std::fprintf(stderr, "%s\n", e.c_str());
    Fail(std::to_string(started) + " of " + std::to_string(watchers) + " watches started");
  }

  const auto write_start = BenchClock::now();
  for (int i = 0; i < writes; ++i) {
    if (rate > 0)
      std::this_thread::sleep_until(write_start + std::chrono::duration_cast<BenchClock::duration>(
                                                      std::chrono::duration<double>(i / rate)));
    const int o = i % kObjects;
    json object = ConfigMap(ns, Name(o), o);
    object["metadata"]["resourceVersion"] = versions[o];
    object["data"]["seq"] = run + std::to_string(i);
    const std::string body = object.dump();
    sent[i] = since_epoch();
    http::Response r = Expect(client.Put(collection + "/" + Name(o), body, kJson), 200, "update");
    versions[o] = StringField(r.body, "resourceVersion");
  }
  const double write_s = Seconds(write_start);
  const auto drain_deadline = BenchClock::now() + std::chrono::seconds(60);
  while (finished.load() < watchers && BenchClock::now() < drain_deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  stop.Cancel();
  for (std::thread& t : threads) t.join();
  if (!errors.empty()) {
    for (const std::string& e : errors) std::fprintf(stderr, "%s\n", e.c_str());
    Fail(std::to_string(errors.size()) + " of " + std::to_string(watchers) +
         " watchers did not receive every event");
  }

  FanOutFigures fig;
  std::vector<double> all;
  std::vector<double> each;
  int64_t last = 0;
  for (int i = 0; i < writes; ++i) {
    int64_t latest = 0;
    for (int w = 0; w < watchers; ++w) {
      latest = std::max(latest, recv[w][i]);
      each.push_back(static_cast<double>(recv[w][i] - sent[i]) / 1e6);
    }
    all.push_back(static_cast<double>(latest - sent[i]) / 1e6);
    last = std::max(last, latest);
  }
  fig.write_rate = writes / write_s;
  fig.delivered =
      static_cast<double>(watchers) * writes / (static_cast<double>(last - sent[0]) / 1e9);
  fig.all_p50 = Percentile(all, 0.5);
  fig.all_p99 = Percentile(all, 0.99);
  fig.all_max = Percentile(all, 1.0);
  fig.each_p50 = Percentile(each, 0.5);
  return fig;
}

void Rule() {
  std::printf("------------------------------------------------------------------------------\n");
}

int Run(const Config& cfg) {
  TempDir dir;
  const auto t_total = BenchClock::now();
  log::Logger logger("bench", SystemClock::Instance(), [](std::string_view) {});
  metrics::Registry registry;

  ApiServerOptions options;
  options.http.port = 0;
  options.http.auth = http::TokenSource::FromValue(kToken);
  options.http.worker_threads =
      static_cast<size_t>(std::max(160, cfg.watchers + 2 * cfg.clients + 16));
  options.http.max_queued_connections = options.http.worker_threads;
  options.http.shutdown_grace = std::chrono::seconds(2);
  options.rate_limit_qps = 0;
  Result<std::unique_ptr<ApiServer>> created =
      ApiServer::Create(std::move(options), OpenStore(dir.path() + "/server.db"),
                        &SystemClock::Instance(), &registry, logger);
  Check(created.status(), "ApiServer::Create");
  std::unique_ptr<ApiServer> server = std::move(created).value();
  Check(server->Start(), "ApiServer::Start");

  http::ClientOptions client_options;
  client_options.base_url = server->BaseUrl();
  client_options.token = http::TokenSource::FromValue(kToken);
  client_options.max_idle_connections = static_cast<size_t>(cfg.clients + 2);
  client_options.max_attempts = 1;  // A failure is a failure, not a retry.
  Result<std::unique_ptr<http::Client>> made = http::Client::Create(client_options);
  Check(made.status(), "Client::Create");
  http::Client& client = **made;
  for (const char* ns : {"single", "bench", "watch"}) {
    Expect(client.Post("/api/v1/namespaces", json{{"metadata", {{"name", ns}}}}.dump(), kJson), 201,
           "create namespace");
  }

  std::printf(
      "sluice_bench_apiserver_http: ApiServer on SQLite (sync=NORMAL), HTTP on loopback, "
      "keep-alive, bearer token, access log formatted and discarded, no rate limit\n");
  Rule();
  std::printf("writes of ~0.8 KB ConfigMaps; baseline: the same writes on a SqliteStorage\n");
  std::printf("%-50s %12s %12s %10s\n", "", "HTTP", "storage", "HTTP cost");
  std::unique_ptr<SqliteStorage> baseline = OpenStore(dir.path() + "/baseline.db");
  const WriteRates http_1 = HttpWrites(client, "single", cfg.single, 1);
  const WriteRates store_1 = StorageWrites(*baseline, "single", cfg.single, 1);
  const WriteRates http_n = HttpWrites(client, "bench", cfg.objects, cfg.clients);
  const WriteRates store_n = StorageWrites(*baseline, "bench", cfg.objects, cfg.clients);
  baseline.reset();
  auto row = [](const std::string& what, double http_rate, double store_rate) {
    std::printf("%-50s %10.0f/s %10.0f/s %9.1fx\n", what.c_str(), http_rate, store_rate,
                store_rate / http_rate);
  };
  const std::string one = ", 1 client (" + std::to_string(cfg.single) + ")";
  const std::string many =
      ", " + std::to_string(cfg.clients) + " clients (" + std::to_string(cfg.objects) + ")";
  row("creates" + one, http_1.creates, store_1.creates);
  row("updates (PUT, resourceVersion)" + one, http_1.updates, store_1.updates);
  row("creates" + many, http_n.creates, store_n.creates);
  row("updates (PUT, resourceVersion)" + many, http_n.updates, store_n.updates);

  Rule();
  std::printf(
      "list %d ConfigMaps of one namespace, %d timed runs each; "
      "baseline: Storage::List of the same pages (p50)\n",
      cfg.objects, cfg.reps);
  std::printf("%-30s %8s %8s %11s %10s %10s %5s\n", "", "p50 ms", "p99 ms", "storage ms",
              "HTTP cost", "bytes", "reqs");
  const size_t n = static_cast<size_t>(cfg.objects);
  const std::string bench = CollectionPath("bench");
  Storage& store = server->storage();
  const double store_all = StorageListMs(store, "bench", 0, cfg.reps);
  const double store_paged = StorageListMs(store, "bench", 500, cfg.reps);
  const size_t selected = n > 7 ? (n - 8) / 100 + 1 : 0;  // i % 100 == 7.
  struct ListCase {
    ListFigures fig;
    double store_ms;
  };
  std::vector<ListCase> lists;
  lists.push_back({TimeList(client, "all, JSON", bench, false, n, cfg.reps), store_all});
  lists.push_back(
      {TimeList(client, "limit=500, to the end", bench + "?limit=500", false, n, cfg.reps),
       store_paged});
  lists.push_back(
      {TimeList(client, "labelSelector, 1% match",
                bench + "?labelSelector=" + QueryEscape("shard=s7"), false, selected, cfg.reps),
       store_all});
  lists.push_back({TimeList(client, "all, as Table", bench, true, n, cfg.reps), store_all});
  for (const ListCase& c : lists) {
    const ListFigures& f = c.fig;
    std::printf("%-30s %8.1f %8.1f %11.1f %9.1fx %10zu %5zu%s\n", f.what.c_str(), f.p50, f.p99,
                c.store_ms, f.p50 / c.store_ms, f.bytes, f.requests,
                f.encoding.empty() ? "" : (" (" + f.encoding + ")").c_str());
  }
  std::printf("(p99 of %d runs is their max; the storage reads all %d objects for a selector)\n",
              cfg.reps, cfg.objects);

  Rule();
  for (int i = 0; i < 10; ++i) {
    Expect(client.Post(CollectionPath("watch"), ConfigMap("watch", Name(i), i).dump(), kJson), 201,
           "create");
  }
  std::printf(
      "watch fan-out: %d watchers (a thread and a stream each), one writer updating 10 "
      "ConfigMaps; latency: from sending the PUT until the last watcher had the event\n",
      cfg.watchers);
  std::printf("%-30s %8s %8s %8s %8s %12s\n", "", "writes/s", "p50 ms", "p99 ms", "max ms",
              "events/s");
  auto fan_row = [&](const std::string& what, const FanOutFigures& f) {
    std::printf("%-30s %8.0f %8.2f %8.2f %8.2f %12.0f\n", what.c_str(), f.write_rate, f.all_p50,
                f.all_p99, f.all_max, f.delivered);
  };
  const FanOutFigures fast = FanOut(client, "watch", cfg.watchers, cfg.writes, 0);
  fan_row(std::to_string(cfg.writes) + " writes, unpaced", fast);
  const FanOutFigures paced = FanOut(client, "watch", cfg.watchers, cfg.paced_writes, kPacedRate);
  fan_row(std::to_string(cfg.paced_writes) + " writes at " +
              std::to_string(static_cast<int>(kPacedRate)) + "/s",
          paced);
  std::printf(
      "(to one watcher, p50: %.2f ms unpaced, %.2f ms paced; every watcher got every event, "
      "in order)\n",
      fast.each_p50, paced.each_p50);
  Rule();
  server->Shutdown();
  std::printf("total %.1f s\n", Seconds(t_total));
  return 0;
}

int ParseInt(const char* text, const char* flag) {
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || v <= 0 || v > 10000000) {
    Fail(std::string("flag ") + flag + ": not a positive integer: " + text);
  }
  return static_cast<int>(v);
}

}  // namespace
}  // namespace sluice::apiserver

int main(int argc, char** argv) {
  using sluice::apiserver::Fail;
  using sluice::apiserver::ParseInt;
  sluice::apiserver::Config cfg;
  // --quick sets smaller defaults wherever it appears; the other flags override them.
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--quick") {
      cfg = {.objects = 1000,
             .single = 200,
             .clients = 4,
             .watchers = 20,
             .writes = 100,
             .reps = 3,
             .paced_writes = 20};
    }
  }
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](const char* flag) {
      if (i + 1 >= argc) Fail(std::string("flag ") + flag + " needs a value");
      return ParseInt(argv[++i], flag);
    };
    if (arg == "--quick") continue;
    if (arg == "--objects") {
      cfg.objects = value("--objects");
    } else if (arg == "--single") {
      cfg.single = value("--single");
    } else if (arg == "--clients") {
      cfg.clients = value("--clients");
    } else if (arg == "--watchers") {
      cfg.watchers = value("--watchers");
    } else if (arg == "--writes") {
      cfg.writes = value("--writes");
    } else if (arg == "--reps") {
      cfg.reps = value("--reps");
    } else {
      std::fprintf(stderr,
                   "usage: %s [--quick] [--objects N] [--single N] [--clients N] [--watchers N] "
                   "[--writes N] [--reps N]\n",
                   argv[0]);
      return 2;
    }
  }
  return sluice::apiserver::Run(cfg);
}
