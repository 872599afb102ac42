// sluice-testpod: the program the local cluster's end-to-end tests run in pods (image
// sluice/testpod, mapped to build/bin/sluice-testpod by the node agent's default image rule).
// One mode per test need:
//
//   serve  --address A --port P [--ready-after-ms N]   HTTP: / says hello with $HOSTNAME,
//                                                       /readyz 503 until N ms passed
//   fetch  --url URL [--timeout-ms N]                   GET until it answers 200 (names resolve
//                                                       through $SLUICE_HOSTS_FILE), print body
//   crash  [--code C] [--after-ms N]                    print a line, exit with C
//   sleep  [--term-delay-ms N] [--ignore-term] [--term-file F]
//                                                       run until SIGTERM, then exit after N ms
//   write  --file F --text T                            append T to F, print F's content, sleep
//   env                                                 print the environment and cwd, sleep
//   cat    FILE...                                      print "== FILE ==" and the content of
//                                                       each file ("cannot read FILE" when it
//                                                       cannot), then sleep
//   worker --address A --port P [...]                   a stand-in rollout worker (also when
//                                                       SLUICE_TESTPOD_MODE=worker, whatever the
//                                                       args): /v1/status with in_flight from
//                                                       $SLUICE_TESTPOD_IN_FLIGHT, POST /v1/drain
//   trainer --address A --port P --steps N              a stand-in trainer rank (also with
//                                                       SLUICE_TESTPOD_MODE=trainer): a step every
//                                                       100 ms, /v1/status, exit 0 after N steps;
//                                                       the rank $SLUICE_TESTPOD_FAIL_RANK exits 1
//                                                       in attempt $SLUICE_TESTPOD_FAIL_ATTEMPT
//   engine --model DIR --served-model-name N --host H --port P
//                                                       a stand-in vLLM server (also with
//                                                       SLUICE_TESTPOD_MODE=engine):
//                                                       stand_in_engine.h
//
// serve, worker and trainer serve HTTPS when given --tls-cert-file F --tls-key-file K, as the
// operator gives the trainer ranks.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/http/client.h"
#include "common/http/hosts_file.h"
#include "common/http/server.h"
#include "common/logging/logger.h"
#include "tests/e2e/testpod/stand_in_engine.h"

extern char** environ;

namespace {

std::atomic<bool> g_term{false};
void OnTerm(int) { g_term = true; }

std::map<std::string, std::string> Flags(int argc, char** argv, int first) {
  std::map<std::string, std::string> flags;
  for (int i = first; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0) continue;
    a = a.substr(2);
    if (size_t eq = a.find('='); eq != std::string::npos) {
      flags[a.substr(0, eq)] = a.substr(eq + 1);
    } else if (i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0) {
      flags[a] = argv[++i];
    } else {
      flags[a] = "true";
    }
  }
  return flags;
}

int64_t Int(const std::map<std::string, std::string>& f, const std::string& k, int64_t d) {
  auto it = f.find(k);
  return it == f.end() ? d : std::stoll(it->second);
}

// Every serving mode: --address (default 127.0.0.1) and --port (8080), quiet, quick to stop.
sluice::http::ServerOptions ServerOptionsFrom(const std::map<std::string, std::string>& f) {
  sluice::http::ServerOptions options;
  options.address = f.count("address") ? f.at("address") : "127.0.0.1";
  options.port = static_cast<int>(Int(f, "port", 8080));
  options.access_log = false;
  options.shutdown_grace = std::chrono::milliseconds(200);
  // As the workers do: the operator gives the trainer ranks a serving certificate.
  if (f.count("tls-cert-file") && f.count("tls-key-file")) {
    options.tls = sluice::http::ServerTlsOptions{f.at("tls-cert-file"), f.at("tls-key-file"), ""};
  }
  return options;
}

const sluice::log::Logger& Logger() {
  static const sluice::log::Logger logger("testpod");
  return logger;
}

void Say(const std::string& line) {
  std::cout << line << std::endl;  // endl: flush, so the log has it at once.
}

void WaitForTerm() {
  while (!g_term) std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

int Serve(const std::map<std::string, std::string>& f) {
  const sluice::http::ServerOptions options = ServerOptionsFrom(f);
  sluice::http::Server server(options, nullptr, Logger());
  const auto start = std::chrono::steady_clock::now();
  const auto ready_after = std::chrono::milliseconds(Int(f, "ready-after-ms", 0));
  const char* host = std::getenv("HOSTNAME");
  const std::string hello = std::string("hello from ") + (host ? host : "?");
  server.Get("/", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(hello + "\n", "text/plain");
  });
  server.AddReadinessCheck("warm-up", [&]() -> sluice::Status {
    if (std::chrono::steady_clock::now() - start < ready_after) {
      return sluice::Status::Unavailable("warming up");
    }
    return sluice::Status::Ok();
  });
  if (sluice::Status s = server.Start(); !s.ok()) {
    std::cerr << "serve: " << s.ToString() << std::endl;
    return 1;
  }
  Say("serving on " + options.address + ":" + std::to_string(server.port()));
  WaitForTerm();
  Say("got SIGTERM");
  server.Shutdown();
  return 0;
}

int Fetch(const std::map<std::string, std::string>& f) {
  const std::string url = f.count("url") ? f.at("url") : "";
  const size_t scheme = url.find("://");
  const size_t path_at = url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  sluice::http::ClientOptions options;
  options.base_url = url.substr(0, path_at);
  const std::string path = path_at == std::string::npos ? "/" : url.substr(path_at);
  options.max_attempts = 1;
  options.connect_timeout = std::chrono::milliseconds(1000);
  options.read_timeout = std::chrono::milliseconds(2000);
  if (const char* hosts = std::getenv("SLUICE_HOSTS_FILE")) {
    options.resolver = std::make_shared<sluice::http::HostsFileResolver>(hosts);
  }
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(Int(f, "timeout-ms", 60000));
  std::string last;
  while (std::chrono::steady_clock::now() < deadline && !g_term) {
    auto client = sluice::http::Client::Create(options);
    if (!client.ok()) {
      std::cerr << "fetch: " << client.status().ToString() << std::endl;
      return 2;
    }
    auto r = (*client)->Get(path);
    if (r.ok() && r->status == 200) {
      std::cout << "fetched " << url << ": " << r->body << std::flush;
      return 0;
    }
    const std::string now = r.ok() ? "HTTP " + std::to_string(r->status) : r.status().ToString();
    if (now != last) std::cerr << "fetch " << url << ": " << now << std::endl;
    last = now;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return 1;
}

// A stand-in for sluice-rollout, speaking the operator's worker contract: GET /v1/status ->
// {in_flight, draining, drained, policies, tokens_per_second}; POST /v1/drain starts draining,
// which finishes (drained) once the in-flight work would have: 300 ms later.
int Worker(const std::map<std::string, std::string>& f) {
  const sluice::http::ServerOptions options = ServerOptionsFrom(f);
  sluice::http::Server server(options, nullptr, Logger());
  const char* load = std::getenv("SLUICE_TESTPOD_IN_FLIGHT");
  const int64_t in_flight = load ? std::atoll(load) : 0;
  std::atomic<int64_t> drain_started_ms{0};
  auto now_ms = [] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  };
  std::string policies = f.count("policies") ? f.at("policies") : "";
  server.Get("/v1/status", [&](const httplib::Request&, httplib::Response& res) {
    const int64_t started = drain_started_ms.load();
    const bool draining = started != 0;
    const bool drained = draining && now_ms() - started >= 300;
    std::string list;
    size_t start = 0;
    while (start < policies.size()) {
      size_t end = policies.find(',', start);
      if (end == std::string::npos) end = policies.size();
      list += std::string(list.empty() ? "" : ",") + "{\"name\":\"" +
              policies.substr(start, end - start) + "\",\"version\":0}";
      start = end + 1;
    }
    res.set_content("{\"in_flight\":" + std::to_string(drained ? 0 : in_flight) +
                        ",\"draining\":" + (draining ? "true" : "false") +
                        ",\"drained\":" + (drained ? "true" : "false") + ",\"policies\":[" + list +
                        "],\"tokens_per_second\":100}",
                    "application/json");
  });
  server.Post("/v1/drain", [&](const httplib::Request&, httplib::Response& res) {
    int64_t expected = 0;
    drain_started_ms.compare_exchange_strong(expected, now_ms());
    Say("drain requested");
    res.set_content("{\"draining\":true}", "application/json");
  });
  if (sluice::Status s = server.Start(); !s.ok()) {
    std::cerr << "worker: " << s.ToString() << std::endl;
    return 1;
  }
  Say("worker serving on " + options.address + ":" + std::to_string(server.port()));
  WaitForTerm();
  Say("got SIGTERM");
  server.Shutdown();
  return 0;
}

// A stand-in for a sluice-trainer rank, speaking the operator's trainer contract: a step every
// 100 ms (version = step), GET /v1/status, exit 0 after --steps. To test gang restarts, the rank
// named by SLUICE_TESTPOD_FAIL_RANK exits 1 after 3 steps in attempt SLUICE_TESTPOD_FAIL_ATTEMPT.
int Trainer(const std::map<std::string, std::string>& f) {
  const sluice::http::ServerOptions options = ServerOptionsFrom(f);
  sluice::http::Server server(options, nullptr, Logger());
  const int64_t steps = Int(f, "steps", 10);
  std::atomic<int64_t> step{0};
  auto env = [](const char* name) {
    const char* v = std::getenv(name);
    return std::string(v ? v : "");
  };
  const bool fail = !env("SLUICE_TESTPOD_FAIL_RANK").empty() &&
                    env("SLUICE_TESTPOD_FAIL_RANK") == env("RANK") &&
                    env("SLUICE_TESTPOD_FAIL_ATTEMPT") == env("SLUICE_ATTEMPT");
  server.Get("/v1/status", [&](const httplib::Request&, httplib::Response& res) {
    const int64_t s = step.load();
    res.set_content(std::string("{\"phase\":\"") + (s >= steps ? "Succeeded" : "Running") +
                        "\",\"step\":" + std::to_string(s) + ",\"version\":" + std::to_string(s) +
                        ",\"metrics\":{\"loss\":0.5,\"rewardMean\":" +
                        std::to_string(static_cast<double>(s) / static_cast<double>(steps)) + "}}",
                    "application/json");
  });
  if (sluice::Status s = server.Start(); !s.ok()) {
    std::cerr << "trainer: " << s.ToString() << std::endl;
    return 1;
  }
  Say("rank " + env("RANK") + " of " + env("WORLD_SIZE") + " (attempt " + env("SLUICE_ATTEMPT") +
      "), master " + env("MASTER_ADDR") + ":" + env("MASTER_PORT"));
  while (!g_term && step.load() < steps) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ++step;
    if (fail && step.load() >= 3) {
      Say("failing on purpose");
      server.Shutdown();
      return 1;
    }
  }
  // Let the operator read the final status before exiting.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  Say("done after " + std::to_string(step.load()) + " steps");
  server.Shutdown();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  signal(SIGTERM, OnTerm);
  if (const char* mode = std::getenv("SLUICE_TESTPOD_MODE");
      mode != nullptr && std::string(mode) == "worker") {
    return Worker(Flags(argc, argv, 1));
  }
  if (const char* mode = std::getenv("SLUICE_TESTPOD_MODE");
      mode != nullptr && std::string(mode) == "trainer") {
    return Trainer(Flags(argc, argv, 1));
  }
  if (const char* mode = std::getenv("SLUICE_TESTPOD_MODE");
      mode != nullptr && std::string(mode) == "engine") {
    return sluice::testpod::RunStandInEngine(Flags(argc, argv, 1), g_term);
  }
  if (argc < 2) {
    std::cerr << "usage: sluice-testpod serve|fetch|crash|sleep|write|env|cat|worker|trainer|"
                 "engine [flags]\n";
    return 2;
  }
  const std::string mode = argv[1];
  const auto f = Flags(argc, argv, 2);
  if (mode == "serve") return Serve(f);
  if (mode == "worker") return Worker(f);
  if (mode == "trainer") return Trainer(f);
  if (mode == "engine") return sluice::testpod::RunStandInEngine(f, g_term);
  if (mode == "fetch") return Fetch(f);
  if (mode == "crash") {
    Say("starting, will exit with " + std::to_string(Int(f, "code", 1)));
    std::this_thread::sleep_for(std::chrono::milliseconds(Int(f, "after-ms", 0)));
    return static_cast<int>(Int(f, "code", 1));
  }
  if (mode == "sleep") {
    if (f.count("ignore-term")) signal(SIGTERM, SIG_IGN);
    // --term-file F: also record the signal and the exit in F (tests read it after deletion).
    auto note = [&](const std::string& line) {
      Say(line);
      if (f.count("term-file")) std::ofstream(f.at("term-file"), std::ios::app) << line << "\n";
    };
    note("sleeping");
    WaitForTerm();
    note("got SIGTERM");
    std::this_thread::sleep_for(std::chrono::milliseconds(Int(f, "term-delay-ms", 0)));
    note("exiting");
    return 0;
  }
  if (mode == "write") {
    const std::string file = f.count("file") ? f.at("file") : "";
    {
      std::ofstream out(file, std::ios::app);
      if (!out) {
        std::cerr << "write: cannot open " << file << std::endl;
        return 1;
      }
      out << (f.count("text") ? f.at("text") : "") << "\n";
    }
    std::ifstream in(file);
    std::stringstream content;
    content << in.rdbuf();
    Say("content of " + file + ":\n" + content.str());
    WaitForTerm();
    return 0;
  }
  if (mode == "cat") {
    for (int i = 2; i < argc; ++i) {
      std::ifstream in(argv[i], std::ios::binary);
      if (!in) {
        Say(std::string("cannot read ") + argv[i]);
        continue;
      }
      std::stringstream content;
      content << in.rdbuf();
      Say(std::string("== ") + argv[i] + " ==\n" + content.str());
    }
    WaitForTerm();
    return 0;
  }
  if (mode == "env") {
    std::vector<std::string> vars;
    for (char** e = environ; *e; ++e) vars.push_back(*e);
    std::sort(vars.begin(), vars.end());
    for (const std::string& v : vars) Say(v);
    char cwd[4096];
    if (getcwd(cwd, sizeof(cwd))) Say(std::string("cwd=") + cwd);
    std::string args;
    for (int i = 0; i < argc; ++i) args += std::string(i ? " " : "") + argv[i];
    Say("argv=" + args);
    WaitForTerm();
    return 0;
  }
  std::cerr << "unknown mode " << mode << "\n";
  return 2;
}
