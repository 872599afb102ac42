#include "common/http/client.h"

#include <netdb.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <charconv>
#include <random>

#include "common/file/read_file.h"
#include "common/http/bulk_exchange.h"
#include "common/http/deadline_server.h"
#include "common/http/json_body.h"

namespace sluice::http {
namespace {

// httplib (0.11, a prebuilt library) sends without MSG_NOSIGNAL and OpenSSL writes with write(),
// so a request written into a pooled connection the server has just closed raises SIGPIPE, which
// kills a process that did not ignore it (the `sluice` CLI died with 141 while following a run).
// Ignoring it turns that write into EPIPE, a connection error that Execute retries where safe.
// httplib::Server does the same in its constructor; a client-only process needs it here. A
// handler the process installed itself is kept.
void IgnoreBrokenPipes() {
  static const bool done = [] {
    struct sigaction current {};
    if (::sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
      ::signal(SIGPIPE, SIG_IGN);
    }
    return true;
  }();
  (void)done;
}

Result<std::string> ReadFile(const std::string& path, std::string_view what) {
  Result<std::string> text = file::ReadWholeFile(path);
  if (!text.ok()) {
    return Status::InvalidArgument(std::string(what) + " \"" + path + "\" cannot be read");
  }
  return text;
}

// Number of certificates in a PEM bundle, or an error naming `what`.
Result<int> CountPemCertificates(const std::string& pem, std::string_view what) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  int count = 0;
  while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    X509_free(cert);
    ++count;
  }
  BIO_free(bio);
  if (count == 0) {
    return Status::InvalidArgument(std::string(what) + " holds no PEM certificate");
  }
  return count;
}

double UnitRandom() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
}

// A 503 from a Sluice server that refused the connection before reading the request
// (deadline_server.h): like a 429, safe to send again whatever the method.
bool RefusedUnread(const Response& out) {
  return out.status == 503 && out.Header(kRequestUnreadHeader) == "true";
}

bool IsRetryableStatus(int status) {
  return status == 429 || status == 502 || status == 503 || status == 504;
}

// Retry-After in delta-seconds form; HTTP-date values fall back to backoff.
std::optional<std::chrono::milliseconds> ParseRetryAfter(const std::string& value) {
  int64_t seconds = 0;
  auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
  if (ec != std::errc() || ptr != value.data() + value.size() || seconds < 0) return std::nullopt;
  return std::chrono::milliseconds(seconds * 1000);
}

// What went wrong, in words a user can act on (httplib's names are identifiers).
std::string DescribeError(httplib::Error error, const ClientOptions& options) {
  switch (error) {
    case httplib::Error::Connection:
      return "cannot connect (connection refused or host unreachable)";
    case httplib::Error::ConnectionTimeout:
      return "connect timed out after " + std::to_string(options.connect_timeout.count()) + " ms";
    case httplib::Error::Read:
      return "reading the response failed (no data for " +
             std::to_string(options.read_timeout.count()) + " ms, or the connection closed)";
    case httplib::Error::Write:
      return "sending the request failed";
    case httplib::Error::SSLConnection:
      return "TLS handshake failed";
    case httplib::Error::SSLLoadingCerts:
      return "loading the TLS certificates failed";
    case httplib::Error::SSLServerVerification:
      return "TLS server certificate verification failed";
    case httplib::Error::Canceled:
      return "cancelled";
    default:
      return httplib::to_string(error);
  }
}

// Reserves room for a body of `length` bytes (the Content-Length; 0 when unknown). Only a hint:
// a length beyond kMaxReserve (a hostile or mistaken header) is not trusted with memory up
// front, and the body then grows as it arrives.
void ReserveBody(uint64_t length, std::string* body) {
  constexpr uint64_t kMaxReserve = uint64_t{1} << 30;
  if (length > 0 && length <= kMaxReserve) body->reserve(static_cast<size_t>(length));
}

}  // namespace

std::string Response::Header(const std::string& name) const {
  // httplib::Headers compares keys case-insensitively.
  auto it = headers.find(name);
  return it == headers.end() ? std::string() : it->second;
}

Status Response::ToStatus() const { return StatusFromReply(status, body); }

Client::Client(ClientOptions options, Url url)
    : options_(std::move(options)),
      url_(std::move(url)),
      clock_(options_.clock ? options_.clock : &SystemClock::Instance()) {}

Result<std::unique_ptr<Client>> Client::Create(ClientOptions options) {
  IgnoreBrokenPipes();
  SLUICE_ASSIGN_OR_RETURN(Url url, ParseBaseUrl(options.base_url));
  if (options.max_attempts < 1) {
    return Status::InvalidArgument("max_attempts must be at least 1", "max_attempts");
  }
  std::unique_ptr<Client> client(new Client(std::move(options), std::move(url)));
  if (client->url_.tls()) SLUICE_RETURN_IF_ERROR(client->LoadTls());
  return client;
}

Client::~Client() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    idle_.clear();
  }
  if (client_cert_) X509_free(client_cert_);
  if (client_key_) EVP_PKEY_free(client_key_);
  if (ca_memfd_ >= 0) ::close(ca_memfd_);
}

Status Client::LoadTls() {
  const ClientTlsOptions& tls = options_.tls;
  if (!tls.ca_file.empty()) {
    SLUICE_ASSIGN_OR_RETURN(std::string pem, ReadFile(tls.ca_file, "CA file"));
    SLUICE_RETURN_IF_ERROR(CountPemCertificates(pem, "CA file " + tls.ca_file).status());
  } else if (!tls.ca_pem.empty()) {
    SLUICE_RETURN_IF_ERROR(CountPemCertificates(tls.ca_pem, "CA data").status());
    ca_memfd_ = ::memfd_create("sluice-ca", MFD_CLOEXEC);
    if (ca_memfd_ < 0) return Status::Internal("cannot create an in-memory file for the CA bundle");
    ca_memfd_path_ = "/proc/self/fd/" + std::to_string(ca_memfd_);
    const ssize_t n = ::write(ca_memfd_, tls.ca_pem.data(), tls.ca_pem.size());
    if (n != static_cast<ssize_t>(tls.ca_pem.size())) {
      return Status::Internal("cannot write the CA bundle to " + ca_memfd_path_);
    }
  }
  std::string cert_pem = tls.client_cert_pem;
  std::string key_pem = tls.client_key_pem;
  if (!tls.client_cert_file.empty()) {
    SLUICE_ASSIGN_OR_RETURN(cert_pem, ReadFile(tls.client_cert_file, "client certificate file"));
  }
  if (!tls.client_key_file.empty()) {
    SLUICE_ASSIGN_OR_RETURN(key_pem, ReadFile(tls.client_key_file, "client key file"));
  }
  if (cert_pem.empty() != key_pem.empty()) {
    return Status::InvalidArgument(
        "a client certificate needs its key and a key needs its certificate; got only one");
  }
  if (!cert_pem.empty()) {
    BIO* bio = BIO_new_mem_buf(cert_pem.data(), static_cast<int>(cert_pem.size()));
    client_cert_ = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    if (!client_cert_) return Status::InvalidArgument("the client certificate is not valid PEM");
    bio = BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size()));
    client_key_ = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    if (!client_key_) return Status::InvalidArgument("the client key is not valid PEM");
    if (X509_check_private_key(client_cert_, client_key_) != 1) {
      return Status::InvalidArgument("the client key does not match the client certificate");
    }
  }
  return Status::Ok();
}

Result<std::string> Client::ConnectAddress() const {
  if (options_.resolver) {
    if (std::optional<std::string> ip = options_.resolver->Lookup(url_.host)) return *ip;
  }
  unsigned char buf[16];
  if (inet_pton(AF_INET, url_.host.c_str(), buf) == 1 ||
      inet_pton(AF_INET6, url_.host.c_str(), buf) == 1) {
    return url_.host;
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = getaddrinfo(url_.host.c_str(), nullptr, &hints, &found); rc != 0) {
    return Status::Unavailable("cannot resolve host \"" + url_.host + "\": " + gai_strerror(rc));
  }
  char text[INET6_ADDRSTRLEN] = {};
  const void* addr =
      found->ai_family == AF_INET
          ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr)
          : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(found->ai_addr)->sin6_addr);
  inet_ntop(found->ai_family, addr, text, sizeof(text));
  freeaddrinfo(found);
  return std::string(text);
}

std::unique_ptr<httplib::ClientImpl> Client::NewConnection() {
  const ClientTlsOptions& tls = options_.tls;
  // The name the connection believes it talks to: checked against the certificate, sent as
  // SNI and Host. The socket may go to another address (resolver hook, server-name override).
  const std::string& name = tls.server_name.empty() ? url_.host : tls.server_name;
  std::unique_ptr<httplib::ClientImpl> conn;
  if (url_.tls()) {
    std::unique_ptr<httplib::SSLClient> ssl =
        client_cert_
            ? std::make_unique<httplib::SSLClient>(name, url_.port, client_cert_, client_key_)
            : std::make_unique<httplib::SSLClient>(name, url_.port);
    if (!tls.ca_file.empty()) ssl->set_ca_cert_path(tls.ca_file.c_str());
    if (!ca_memfd_path_.empty()) ssl->set_ca_cert_path(ca_memfd_path_.c_str());
    ssl->enable_server_certificate_verification(!tls.insecure_skip_verify);
    conn = std::move(ssl);
  } else {
    conn = std::make_unique<httplib::ClientImpl>(name, url_.port);
  }
  const bool redirected = options_.resolver != nullptr || name != url_.host;
  if (redirected) {
    Result<std::string> address = ConnectAddress();
    // On failure leave the map empty: the connection then fails with the resolver's own error.
    if (address.ok() && *address != name) conn->set_hostname_addr_map({{name, *address}});
  }
  conn->set_keep_alive(true);
  conn->set_connection_timeout(options_.connect_timeout);
  conn->set_read_timeout(options_.read_timeout);
  conn->set_write_timeout(options_.write_timeout);
  conn->set_tcp_nodelay(true);
  return conn;
}

std::unique_ptr<httplib::ClientImpl> Client::Acquire(bool* reused) {
  std::vector<Idle> expired;  // Closed outside the lock.
  {
    std::lock_guard<std::mutex> lock(mu_);
    const Clock::MonoTime now = clock_->Now();
    while (!idle_.empty()) {
      Idle idle = std::move(idle_.back());
      idle_.pop_back();
      if (now - idle.since <= options_.max_idle_time) {
        // The rest were released earlier, so idle longer: close those that are now too old.
        std::erase_if(idle_, [&](Idle& older) {
          if (now - older.since <= options_.max_idle_time) return false;
          expired.push_back(std::move(older));
          return true;
        });
        *reused = true;
        return std::move(idle.conn);
      }
      expired.push_back(std::move(idle));
    }
  }
  *reused = false;
  return NewConnection();
}

void Client::Release(std::unique_ptr<httplib::ClientImpl> conn) {
  std::lock_guard<std::mutex> lock(mu_);
  if (idle_.size() < options_.max_idle_connections) {
    idle_.push_back({std::move(conn), clock_->Now()});
  }
}

void Client::DropIdle() {
  std::vector<Idle> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    dropped.swap(idle_);
  }
}

bool Client::IsIdempotent(const Request& request) const {
  if (request.idempotent) return *request.idempotent;
  const std::string& m = request.method;
  return m == "GET" || m == "HEAD" || m == "PUT" || m == "DELETE" || m == "OPTIONS";
}

Result<Response> Client::Send(Request request) { return Execute(request, nullptr, nullptr); }

namespace {

Request MakeRequest(const char* method, std::string path, std::string body = {},
                    std::string content_type = {}) {
  Request r;
  r.method = method;
  r.path = std::move(path);
  r.body = std::move(body);
  r.content_type = std::move(content_type);
  return r;
}

}  // namespace

Result<Response> Client::Get(std::string path) { return Send(MakeRequest("GET", std::move(path))); }

Result<Response> Client::Delete(std::string path) {
  return Send(MakeRequest("DELETE", std::move(path)));
}

Result<Response> Client::Post(std::string path, std::string body, std::string content_type) {
  return Send(MakeRequest("POST", std::move(path), std::move(body), std::move(content_type)));
}

Result<Response> Client::Put(std::string path, std::string body, std::string content_type) {
  return Send(MakeRequest("PUT", std::move(path), std::move(body), std::move(content_type)));
}

Result<Response> Client::Stream(Request request,
                                const std::function<bool(const Response&)>& on_head,
                                const std::function<bool(std::string_view)>& on_data) {
  return Execute(request, &on_head, &on_data);
}

Result<Response> Client::Execute(Request& request,
                                 const std::function<bool(const Response&)>* on_head,
                                 const std::function<bool(std::string_view)>* on_data) {
  const bool streaming = on_data != nullptr;
  if (request.bulk_body && !streaming && !url_.tls()) return ExecuteBulk(request);
  const bool idempotent = IsIdempotent(request);
  const std::string target = url_.path + request.path;
  const std::string what = request.method + " " + url_.ToString() + request.path;
  constexpr size_t kMaxErrorBody = 64 << 10;

  bool resent_on_new_connection = false;  // See the stale-connection case below.
  bool resend_now = false;                // This attempt is that resend.
  for (int attempt = 0;; ++attempt) {
    if (request.cancel && request.cancel->IsCancelled()) {
      return Status::Cancelled(what + ": cancelled");
    }
    bool reused = false;
    std::unique_ptr<httplib::ClientImpl> conn = resend_now ? NewConnection() : Acquire(&reused);
    resend_now = false;
    httplib::Request hreq;
    hreq.method = request.method;
    hreq.path = target;
    hreq.headers = request.headers;
    hreq.headers.emplace("User-Agent", options_.user_agent);
    if (options_.token) hreq.headers.emplace("Authorization", "Bearer " + options_.token->Get());
    if (!request.body.empty() || request.method == "POST" || request.method == "PUT" ||
        request.method == "PATCH") {
      hreq.body = request.body;
      hreq.headers.emplace("Content-Type", request.content_type.empty()
                                               ? std::string("application/octet-stream")
                                               : request.content_type);
    }

    Response out;
    bool got_head = false;
    bool caller_stopped = false;
    bool too_large = false;
    if (!streaming) {
      // httplib would append to a growing string in 4 KiB reads, so a large body (a 35 MB
      // batch) is re-copied into fresh memory at every doubling. Reserve the Content-Length.
      const size_t cap = options_.max_response_bytes;
      hreq.content_receiver = [&out, &too_large, cap](const char* data, size_t n, uint64_t offset,
                                                      uint64_t length) {
        if (length > cap || out.body.size() + n > cap) {
          too_large = true;
          return false;
        }
        if (offset == 0 && out.body.empty()) ReserveBody(length, &out.body);
        out.body.append(data, n);
        return true;
      };
    } else {
      hreq.response_handler = [&](const httplib::Response& head) {
        // A cancellation that came before send() opened the socket found nothing to shut
        // down; catch it here, before the (possibly silent) body is read.
        if (request.cancel && request.cancel->IsCancelled()) {
          caller_stopped = true;
          return false;
        }
        got_head = true;
        out.status = head.status;
        out.headers = head.headers;
        if (on_head && *on_head && !(*on_head)(out)) {
          caller_stopped = true;
          return false;
        }
        return true;
      };
      hreq.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
        if (request.cancel && request.cancel->IsCancelled()) {
          caller_stopped = true;
          return false;
        }
        if (out.status < 200 || out.status >= 300) {  // Errors are collected, not streamed.
          if (out.body.size() < kMaxErrorBody) out.body.append(data, n);
          return true;
        }
        if (!(*on_data)(std::string_view(data, n))) {
          caller_stopped = true;
          return false;
        }
        return true;
      };
    }

    httplib::Response hres;
    httplib::Error error = httplib::Error::Success;
    // A stream may be silent for long (a watch); cancellation shuts its socket down so the
    // blocked read returns at once instead of after read_timeout.
    CancellationRegistration stop_on_cancel;
    if (streaming && request.cancel) {
      httplib::ClientImpl* raw = conn.get();
      stop_on_cancel = request.cancel->OnCancel([raw] { raw->stop(); });
    }
    const bool sent = conn->send(hreq, hres, error);
    stop_on_cancel.Reset();
    if (!sent && request.cancel && request.cancel->IsCancelled()) {
      return Status::Cancelled(what + ": cancelled");
    }
    if (sent) {
      if (!streaming) {
        out.status = hres.status;
        out.headers = std::move(hres.headers);
      }
      Release(std::move(conn));
      const std::optional<std::chrono::milliseconds> delay =
          RetryDelayForStatus(out, attempt, idempotent);
      if (!delay) return out;
      if (SleepBeforeRetry(request, *delay)) return Status::Cancelled(what + ": cancelled");
      continue;
    }
    if (too_large) {
      return Status(StatusCode::kTooLarge, what + ": the response is larger than " +
                                               std::to_string(options_.max_response_bytes) +
                                               " bytes");
    }
    if (caller_stopped && got_head) {
      if (request.cancel && request.cancel->IsCancelled()) {
        return Status::Cancelled(what + ": cancelled");
      }
      return out;  // The caller chose to stop reading; that is success.
    }
    // A pooled connection the server closed while it sat idle (its keep-alive timeout) fails
    // the write of the next request. The server cannot have acted on a request it did not
    // receive whole, so it is sent once more on a new connection, whatever its method and
    // without counting an attempt: an operator's event (a POST) was lost this way. The other
    // pooled connections, idle as long, are dropped, and the resend opens a new one: taking the
    // next pooled one lost a SpilledOver event when it was closed too.
    if (error == httplib::Error::Write && reused && !got_head && !resent_on_new_connection) {
      resent_on_new_connection = true;
      resend_now = true;
      DropIdle();
      --attempt;
      continue;
    }
    std::string message = what + ": " + DescribeError(error, options_);
    if (error == httplib::Error::SSLServerVerification) {
      if (auto* ssl = dynamic_cast<httplib::SSLClient*>(conn.get())) {
        message += std::string(" (") +
                   X509_verify_cert_error_string(ssl->get_openssl_verify_result()) + ")";
      }
    }
    const StatusCode code =
        error == httplib::Error::ConnectionTimeout || (error == httplib::Error::Read && got_head)
            ? StatusCode::kDeadlineExceeded
            : StatusCode::kUnavailable;
    const bool may_retry = idempotent && !got_head && attempt + 1 < options_.max_attempts &&
                           error != httplib::Error::SSLServerVerification &&
                           error != httplib::Error::SSLLoadingCerts;
    if (!may_retry) return Status(code, std::move(message));
    if (SleepBeforeRetry(request, BackoffDelay(options_.backoff, attempt, UnitRandom()))) {
      return Status::Cancelled(what + ": cancelled");
    }
  }
}

std::optional<std::chrono::milliseconds> Client::RetryDelayForStatus(const Response& out,
                                                                     int attempt,
                                                                     bool idempotent) const {
  const bool may_retry = IsRetryableStatus(out.status) && attempt + 1 < options_.max_attempts &&
                         (out.status == 429 || idempotent || RefusedUnread(out));
  if (!may_retry) return std::nullopt;
  std::chrono::milliseconds delay = BackoffDelay(options_.backoff, attempt, UnitRandom());
  if (auto after = ParseRetryAfter(out.Header("Retry-After"))) {
    delay = std::min(*after, options_.max_retry_after);
  }
  return delay;
}

bool Client::SleepBeforeRetry(const Request& request, std::chrono::milliseconds delay) const {
  if (request.cancel) return request.cancel->WaitFor(delay);
  clock_->SleepFor(delay);
  return false;
}

Result<std::string> Client::BulkRequestBytes(const Request& request) const {
  const auto bad = [](std::string_view s) {
    return s.find_first_of("\r\n") != std::string_view::npos;
  };
  const std::string target = url_.path + request.path;
  if (bad(target) || target.find(' ') != std::string::npos) {
    return Status::InvalidArgument("the request path has a space, CR or LF", "path");
  }
  const std::string& name = options_.tls.server_name.empty() ? url_.host : options_.tls.server_name;
  std::string host = name.find(':') != std::string::npos ? "[" + name + "]" : name;
  if (url_.port != 80) host += ":" + std::to_string(url_.port);
  std::string out = request.method + " " + target + " HTTP/1.1\r\nHost: " + host +
                    "\r\nUser-Agent: " + options_.user_agent + "\r\nConnection: close\r\n";
  if (options_.token) out += "Authorization: Bearer " + options_.token->Get() + "\r\n";
  for (const auto& [key, value] : request.headers) {
    if (bad(key) || bad(value)) {
      return Status::InvalidArgument("header " + key + " has a CR or LF", "headers");
    }
    out += key + ": " + value + "\r\n";
  }
  if (!request.body.empty() || request.method == "POST" || request.method == "PUT" ||
      request.method == "PATCH") {
    out += "Content-Type: " +
           (request.content_type.empty() ? std::string("application/octet-stream")
                                         : request.content_type) +
           "\r\nContent-Length: " + std::to_string(request.body.size()) + "\r\n";
  }
  out += "\r\n";
  out += request.body;
  return out;
}

Result<Response> Client::ExecuteBulk(Request& request) {
  const bool idempotent = IsIdempotent(request);
  const std::string what = request.method + " " + url_.ToString() + request.path;
  SLUICE_ASSIGN_OR_RETURN(const std::string bytes, BulkRequestBytes(request));
  for (int attempt = 0;; ++attempt) {
    if (request.cancel && request.cancel->IsCancelled()) {
      return Status::Cancelled(what + ": cancelled");
    }
    BulkExchangeResult r;
    Result<std::string> address = ConnectAddress();
    if (address.ok()) {
      BulkExchangeOptions o;
      o.address = *address;
      o.port = url_.port;
      o.connect_timeout = options_.connect_timeout;
      o.read_timeout = options_.read_timeout;
      o.write_timeout = options_.write_timeout;
      o.max_response_bytes = options_.max_response_bytes;
      r = BulkExchange(o, bytes, request.cancel);
    } else {
      r.failure = BulkFailure::kConnect;
      r.message = address.status().message();
    }
    if (r.failure == BulkFailure::kNone) {
      Response out;
      out.status = r.status;
      out.headers = std::move(r.headers);
      out.body = std::move(r.body);
      const std::optional<std::chrono::milliseconds> delay =
          RetryDelayForStatus(out, attempt, idempotent);
      if (!delay) return out;
      if (SleepBeforeRetry(request, *delay)) return Status::Cancelled(what + ": cancelled");
      continue;
    }
    const std::string message = what + ": " + r.message;
    switch (r.failure) {
      case BulkFailure::kCancelled:
        return Status::Cancelled(what + ": cancelled");
      case BulkFailure::kTooLarge:
        return Status(StatusCode::kTooLarge, message);
      case BulkFailure::kMalformed:
        return Status::Unavailable(message);  // Not retried: the server would answer the same.
      default:
        break;
    }
    const StatusCode code = r.failure == BulkFailure::kConnectTimeout ||
                                    (r.failure == BulkFailure::kReadTimeout && r.got_head)
                                ? StatusCode::kDeadlineExceeded
                                : StatusCode::kUnavailable;
    if (!idempotent || r.got_head || attempt + 1 >= options_.max_attempts) {
      return Status(code, message);
    }
    if (SleepBeforeRetry(request, BackoffDelay(options_.backoff, attempt, UnitRandom()))) {
      return Status::Cancelled(what + ": cancelled");
    }
  }
}

}  // namespace sluice::http
