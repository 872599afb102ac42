// ConnectionStream: one accepted connection, plain TCP or TLS, as the byte stream cpp-httplib
// parses requests from and writes responses to, with a deadline on reading.
//
// cpp-httplib's own socket stream times out each read separately, so a client that sends one
// byte a second holds a worker thread for as long as it likes. This stream works on a
// non-blocking socket and bounds every wait by both the per-read timeout and an absolute read
// deadline (SetReadDeadline): once the deadline passes, reads fail and read_deadline_passed()
// says why. Writes wait at most the write timeout for room, each time.
//
// Reads are buffered (cpp-httplib reads a request line a byte at a time). read() returns 0 when
// the peer has closed (a body without a length ends so), -1 on errors, timeouts and the deadline.
//
// Ownership: borrows `fd` and `ssl`; the caller closes them after the stream is gone.
// Thread safety: one thread at a time (the worker serving the connection).
#pragma once

#include <httplib.h>
#include <openssl/ssl.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>

namespace sluice::http {

class ConnectionStream final : public httplib::Stream {
 public:
  using SteadyTime = std::chrono::steady_clock::time_point;

  // `fd` must be non-blocking. `ssl` is null for plain TCP, else a TLS session on `fd` whose
  // handshake is done (AcceptTls).
  ConnectionStream(int fd, SSL* ssl, std::chrono::milliseconds read_timeout,
                   std::chrono::milliseconds write_timeout);

  // Reads that would wait past `deadline` fail from then on (a request's head and body must
  // arrive before it). ClearReadDeadline lifts it.
  void SetReadDeadline(SteadyTime deadline);
  void ClearReadDeadline();
  // True once a read failed because the read deadline had passed.
  bool read_deadline_passed() const { return deadline_passed_; }

  // Waits up to `timeout` for the next request's first byte; true when one is there (buffered or
  // on the socket). `keep_waiting` is asked between short polls, so a server shutting down ends
  // the wait early.
  bool AwaitInput(std::chrono::milliseconds timeout, const std::function<bool()>& keep_waiting);

  bool is_readable() const override;
  bool is_writable() const override;
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  socket_t socket() const override { return fd_; }

 private:
  // How often a keep-alive wait looks whether the server is stopping.
  static constexpr std::chrono::milliseconds kShutdownCheck{50};

  bool HasBufferedInput() const;
  // poll() for readability or writability up to `timeout`: >0 ready, 0 timed out, <0 error.
  int PollFor(bool readable, std::chrono::milliseconds timeout) const;
  // The wait a read may make now: the read timeout, cut short by the deadline.
  std::chrono::milliseconds ReadWait(bool* deadline_bound) const;
  // Fills the buffer with at least one byte: 1; 0 when the peer closed; -1 on an error, a
  // timeout or the deadline.
  int Fill();

  int fd_;
  SSL* ssl_;
  std::chrono::milliseconds read_timeout_;
  std::chrono::milliseconds write_timeout_;
  std::optional<SteadyTime> deadline_;
  bool deadline_passed_ = false;
  std::array<char, 4096> buffer_{};
  size_t begin_ = 0;
  size_t end_ = 0;
};

// Makes `fd` non-blocking; false (errno set) when it cannot.
bool SetNonBlocking(int fd);

// Runs the server side of a TLS handshake on the non-blocking `fd` until `deadline`. Returns the
// session (free with SSL_free) or null, with `error` saying why and `timed_out` whether the
// deadline passed.
SSL* AcceptTls(SSL_CTX* ctx, int fd, ConnectionStream::SteadyTime deadline, std::string* error,
               bool* timed_out);

}  // namespace sluice::http
