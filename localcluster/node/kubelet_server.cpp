#include "localcluster/node/kubelet_server.h"

#include <map>
#include <memory>

#include "localcluster/node/container_log.h"

namespace sluice::node {

namespace {

void ReplyError(httplib::Response& res, int code, const std::string& message) {
  res.status = code;
  res.set_content(message + "\n", "text/plain");
}

}  // namespace

void RegisterKubeletRoutes(http::Server& server, std::function<const NodeAgent*()> agent) {
  http::Server* srv = &server;
  server.Get(R"(/containerLogs/([^/]+)/([^/]+)/([^/]+))", [agent, srv](const httplib::Request& req,
                                                                       httplib::Response& res) {
    const NodeAgent* a = agent();
    if (a == nullptr) return ReplyError(res, 503, "the node agent is starting");
    const std::string ns = req.matches[1], pod = req.matches[2], container = req.matches[3];
    std::map<std::string, std::string> query;
    for (const auto& [k, v] : req.params) query[k] = v;
    Result<LogOptions> options = ParseLogOptions(query);
    if (!options.ok()) return ReplyError(res, 400, options.status().message());
    Result<std::filesystem::path> file = a->LogFile(ns, pod, container, options->previous);
    if (!file.ok()) {
      return ReplyError(res, file.status().code() == StatusCode::kNotFound ? 404 : 400,
                        file.status().message());
    }
    if (!options->follow) {
      Result<std::string> text = ReadLog(*file, *options, std::chrono::system_clock::now());
      if (!text.ok()) {
        return ReplyError(res, text.status().code() == StatusCode::kNotFound ? 404 : 500,
                          text.status().message());
      }
      res.set_content(*text, "text/plain");
      return;
    }
    CancellationToken shutdown = srv->shutdown_token();
    const LogOptions opts = *options;
    const std::filesystem::path path = *file;
    res.set_chunked_content_provider(
        "text/plain",
        [agent, ns, pod, container, opts, path, shutdown](size_t, httplib::DataSink& sink) -> bool {
          auto ended = [&] {
            const NodeAgent* now = agent();
            // The file of the current run ends when its process does; a newer run
            // writes a new file (kubectl re-runs logs -f for it).
            if (now == nullptr) return true;
            Result<std::filesystem::path> current = now->LogFile(ns, pod, container, false);
            return !current.ok() || *current != path || !now->ContainerRunning(ns, pod, container);
          };
          auto write = [&](std::string_view text) {
            return sink.is_writable() && sink.write(text.data(), text.size());
          };
          (void)FollowLog(path, opts, std::chrono::system_clock::now(), shutdown, ended, write);
          sink.done();
          return true;
        });
  });
}

}  // namespace sluice::node
