// The TCP side of the Kafka listener: one thread (the event loop) accepts connections and reads
// plain TCP ones with epoll; worker threads, started on demand, accept the requests and write
// the answers, so an idle connection costs no thread. A TLS connection holds a worker for its
// life. OpenSSL's errors are translated here.
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "oxbow/common/file_system.h"
#include "oxbow/common/mutex.h"
#include "oxbow/kafka/broker_internal.h"
#include "oxbow/kafka/workers_internal.h"

namespace oxbow::kafka {
namespace {

// Requests of a connection that has not logged in yet are bounded by this (Kafka's
// sasl.server.max.receive.size), so that no one unauthenticated makes the server allocate much.
constexpr int32_t kMaxUnauthenticatedRequestBytes = 512 * 1024;
// Requests of a connection accepted before the oldest is answered: Kafka clients' default
// max.in.flight.requests.per.connection.
constexpr size_t kMaxAnswersInFlight = 5;

// The last OpenSSL errors as text (and the queue cleared).
std::string OpenSslErrors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char text[256];
    ERR_error_string_n(e, text, sizeof(text));
    out += out.empty() ? "" : "; ";
    out += text;
  }
  return out.empty() ? "unknown TLS error" : out;
}

using SslCtxPtr = std::unique_ptr<SSL_CTX, void (*)(SSL_CTX*)>;
using SslPtr = std::unique_ptr<SSL, void (*)(SSL*)>;

// The server side TLS context of the PEM files in `options`; null when TLS is off.
Result<SslCtxPtr> MakeTlsContext(const KafkaOptions& options) {
  SslCtxPtr none(nullptr, SSL_CTX_free);
  if (options.tls_cert_file.empty() != options.tls_key_file.empty()) {
    return Status::Invalid("TLS needs both --tls-cert and --tls-key");
  }
  if (options.tls_cert_file.empty()) {
    if (!options.tls_client_ca_file.empty()) {
      return Status::Invalid("--tls-client-ca needs --tls-cert and --tls-key");
    }
    return none;
  }
  SslCtxPtr ctx(SSL_CTX_new(TLS_server_method()), SSL_CTX_free);
  if (!ctx) return Status::Internal("TLS: " + OpenSslErrors());
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  SSL_CTX_set_mode(ctx.get(), SSL_MODE_AUTO_RETRY);
  if (SSL_CTX_use_certificate_chain_file(ctx.get(), options.tls_cert_file.c_str()) != 1) {
    return Status::Invalid("TLS certificate " + Quote(options.tls_cert_file) + ": " +
                           OpenSslErrors());
  }
  if (SSL_CTX_use_PrivateKey_file(ctx.get(), options.tls_key_file.c_str(), SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_check_private_key(ctx.get()) != 1) {
    return Status::Invalid("TLS key " + Quote(options.tls_key_file) +
                           " (does it match the certificate?): " + OpenSslErrors());
  }
  if (!options.tls_client_ca_file.empty()) {
    if (SSL_CTX_load_verify_locations(ctx.get(), options.tls_client_ca_file.c_str(), nullptr) !=
        1) {
      return Status::Invalid("TLS client CA " + Quote(options.tls_client_ca_file) + ": " +
                             OpenSslErrors());
    }
    SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  }
  return ctx;
}

// One accepted connection's bytes: plain TCP (its socket non-blocking), or TLS over it (its
// socket blocking).
class Stream {
 public:
  Stream(int fd, SSL_CTX* tls) : fd_(fd), ssl_(tls ? SSL_new(tls) : nullptr, SSL_free) {}

  // The TLS handshake (nothing for plain TCP); false when it fails.
  bool Open() {
    if (!ssl_) return true;
    if (SSL_set_fd(ssl_.get(), fd_) != 1 || SSL_accept(ssl_.get()) != 1) {
      spdlog::warn("kafka: TLS handshake failed: {}", OpenSslErrors());
      return false;
    }
    return true;
  }

  // Reads exactly n bytes (TLS only: plain TCP is read by the event loop); false on EOF or error.
  bool ReadFully(char* out, size_t n) {
    while (n > 0) {
      size_t got = 0;
      if (SSL_read_ex(ssl_.get(), out, n, &got) != 1) {
        ERR_clear_error();
        return false;
      }
      out += got;
      n -= got;
    }
    return true;
  }

  // Writes a size-prefixed frame; false when the connection failed.
  bool WriteFrame(std::string_view body) {
    Writer prefix;
    prefix.Int32(static_cast<int32_t>(body.size()));
    const std::string_view size = prefix.buffer();
    if (ssl_) return WriteTls(size) && WriteTls(body);
    iovec parts[2] = {{const_cast<char*>(size.data()), size.size()},
                      {const_cast<char*>(body.data()), body.size()}};
    size_t next = 0;  // the first part not wholly sent
    while (next < 2) {
      msghdr message{};
      message.msg_iov = parts + next;
      message.msg_iovlen = 2 - next;
      const ssize_t r = ::sendmsg(fd_, &message, MSG_NOSIGNAL);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        pollfd p{fd_, POLLOUT, 0};  // a slow reader: wait for room (Stop shuts the socket)
        (void)::poll(&p, 1, -1);
        continue;
      }
      if (r <= 0) return false;
      auto sent = static_cast<size_t>(r);
      while (next < 2 && sent >= parts[next].iov_len) sent -= parts[next++].iov_len;
      if (next < 2) {
        parts[next].iov_base = static_cast<char*>(parts[next].iov_base) + sent;
        parts[next].iov_len -= sent;
      }
    }
    return true;
  }

  // Closes after a last response the peer must still read (a failed login): half-closes, then
  // waits up to half a second for the peer to close, as Kafka delays closing after a failed
  // authentication (connection.failed.authentication.delay.ms).
  void Linger() {
    if (ssl_) (void)SSL_shutdown(ssl_.get());
    ::shutdown(fd_, SHUT_WR);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
    char discard[512];
    while (true) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                            deadline - std::chrono::steady_clock::now())
                            .count();
      pollfd p{fd_, POLLIN, 0};
      if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) <= 0) return;
      const ssize_t r = ::recv(fd_, discard, sizeof(discard), 0);
      if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) return;
    }
  }

 private:
  bool WriteTls(std::string_view data) {
    while (!data.empty()) {
      size_t sent = 0;
      if (SSL_write_ex(ssl_.get(), data.data(), data.size(), &sent) != 1) {
        ERR_clear_error();
        return false;
      }
      data.remove_prefix(sent);
    }
    return true;
  }

  int fd_;
  SslPtr ssl_;
};

// "/127.0.0.1", as Kafka reports a client's host.
std::string PeerHost(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  char host[NI_MAXHOST] = "";
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0 ||
      getnameinfo(reinterpret_cast<sockaddr*>(&addr), len, host, sizeof(host), nullptr, 0,
                  NI_NUMERICHOST) != 0) {
    return "";
  }
  return std::string("/") + host;
}

Result<int> Listen(const std::string& address, int* port) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) {
    return Status::Invalid("Kafka listen address " + Quote(address) + " is not host:port");
  }
  const std::string host = address.substr(0, colon);
  const std::string service = address.substr(colon + 1);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  if (int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &found);
      rc != 0) {
    return Status::Invalid("Kafka listen address " + Quote(address) + ": " + gai_strerror(rc));
  }
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> guard(found, freeaddrinfo);
  const int fd = ::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrnoToStatus(errno, "socket", address);
  const int one = 1;
  (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd, found->ai_addr, found->ai_addrlen) != 0 || ::listen(fd, 128) != 0) {
    Status st = ErrnoToStatus(errno, "bind", address);
    ::close(fd);
    return st;
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  *port = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                            : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  return fd;
}

// A connection: its stream, its session and the requests it still owes answers to. Plain TCP is
// read by the event loop; a worker task accepts its requests, and another writes their answers,
// each at most one at a time, so both stay in request order. A TLS connection is served by one
// worker task from start to end.
struct Connection {
  Connection(int fd, SSL_CTX* tls) : fd(fd), stream(fd, tls) {}
  ~Connection() { ::close(fd); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  const int fd;
  Stream stream;
  internal::Session session;  // the accepting task's
  std::atomic<bool> logged_in{false};
  std::string input;           // the event loop's: bytes read past the last whole frame
  size_t frame_remaining = 0;  // the event loop's: bytes the frame under way still lacks

  Mutex mu;
  std::deque<std::string> frames OXBOW_GUARDED_BY(mu);  // read, not yet accepted
  std::deque<std::pair<internal::Broker::Answer, bool>> answers OXBOW_GUARDED_BY(mu);
  size_t unanswered OXBOW_GUARDED_BY(mu) = 0;  // frames, answers and the answer being written
  bool accepting OXBOW_GUARDED_BY(mu) = false;
  bool answering OXBOW_GUARDED_BY(mu) = false;
  bool reading OXBOW_GUARDED_BY(mu) = true;      // the event loop polls it for input
  bool read_ended OXBOW_GUARDED_BY(mu) = false;  // EOF, or its last request is accepted
  bool closed OXBOW_GUARDED_BY(mu) = false;
};

// Adds `fd` to the epoll set for input; false (errno set) when it cannot.
bool Watch(int epoll_fd, int fd) {
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.fd = fd;
  return ::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &event) == 0;
}

class TcpKafkaServer : public KafkaServer {
 public:
  TcpKafkaServer(int listen_fd, int wake_fd, int epoll_fd, int port, int32_t max_request_bytes,
                 SslCtxPtr tls, std::unique_ptr<internal::Broker> broker)
      : listen_fd_(listen_fd),
        wake_fd_(wake_fd),
        epoll_fd_(epoll_fd),
        port_(port),
        max_request_bytes_(max_request_bytes),
        tls_(std::move(tls)),
        broker_(std::move(broker)) {
    loop_thread_ = std::thread([this] { EventLoop(); });
  }
  ~TcpKafkaServer() override { Stop(); }

  int port() const override { return port_; }
  std::vector<ConsumerGroup> ConsumerGroups() override { return broker_->ConsumerGroups(); }

  void Stop() override {
    {
      MutexLock lock(mu_);
      if (stopped_) return;
      stopped_ = true;
    }
    broker_->Stop();
    const uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof(one));
    loop_thread_.join();  // it shuts every connection as it ends
    workers_.Drain();
    {
      MutexLock lock(mu_);
      connections_.clear();
    }
    ::close(epoll_fd_);
    ::close(listen_fd_);
    ::close(wake_fd_);
  }

 private:
  using ConnectionPtr = std::shared_ptr<Connection>;

  // Waits for sockets: accepts connections, reads plain TCP ones and hands their whole frames to
  // the workers. Wakes once a second at least, to have a worker save producer state when due.
  void EventLoop() {
    pthread_setname_np(pthread_self(), "kafka-listener");
    epoll_event events[256];
    bool stopping = false;
    auto next_save = std::chrono::steady_clock::now();
    while (!stopping) {
      const int n = ::epoll_wait(epoll_fd_, events, 256, 1000);
      if (n < 0 && errno != EINTR) {
        spdlog::error("kafka: epoll_wait: {}", std::strerror(errno));
        break;
      }
      if (const auto now = std::chrono::steady_clock::now(); now >= next_save) {
        next_save = now + std::chrono::seconds(1);
        // The node saves them at close too.
        workers_.Run([producers = broker_->node()->producers()] { producers->SaveIfDue(); });
      }
      for (int i = 0; i < n; ++i) {
        const int fd = events[i].data.fd;
        if (fd == wake_fd_) {
          stopping = true;
        } else if (fd == listen_fd_) {
          AcceptConnections();
        } else if (ConnectionPtr c = Find(fd)) {
          ReadFrom(c);
        }
      }
    }
    MutexLock lock(mu_);
    for (auto& [fd, c] : connections_) Shut(*c);
  }

  ConnectionPtr Find(int fd) {
    MutexLock lock(mu_);
    auto it = connections_.find(fd);
    return it == connections_.end() ? nullptr : it->second;
  }

  void AcceptConnections() {
    while (true) {
      const int fd =
          ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | (tls_ ? 0 : SOCK_NONBLOCK));
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
          spdlog::warn("kafka: accepting a connection: {}", std::strerror(errno));
          std::this_thread::sleep_for(std::chrono::milliseconds(10));  // out of files: no spin
        }
        return;
      }
      const int one = 1;
      (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      auto c = std::make_shared<Connection>(fd, tls_.get());
      c->session.client_host = PeerHost(fd);
      {
        MutexLock lock(mu_);
        connections_[fd] = c;
      }
      if (tls_) {
        if (!workers_.RunNow([this, c] { ServeTls(c); })) {
          spdlog::warn("kafka: refusing a connection: no thread can serve it ({} run)",
                       workers_.threads());
          Forget(fd);
        }
        continue;
      }
      epoll_event event{};
      event.events = EPOLLIN | EPOLLRDHUP;
      event.data.fd = fd;
      if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event) != 0) {
        spdlog::warn("kafka: refusing a connection: epoll_ctl: {}", std::strerror(errno));
        Forget(fd);
      }
    }
  }

  void Forget(int fd) {
    MutexLock lock(mu_);
    connections_.erase(fd);
  }

  // Whether the connection may send a frame of `size` bytes now (logged when not).
  bool FrameSizeAllowed(const Connection& c, int32_t size) const {
    const int32_t limit = broker_->auth_required() && !c.logged_in
                              ? std::min(max_request_bytes_, kMaxUnauthenticatedRequestBytes)
                              : max_request_bytes_;
    if (size >= 0 && size <= limit) return true;
    spdlog::warn("kafka: closing a connection that sent a {} byte request (limit {})", size, limit);
    return false;
  }

  // Reads what the socket holds (once: the loop comes back while more is there) and hands the
  // whole frames to the accepting task. A large frame is read straight into its buffer.
  void ReadFrom(const ConnectionPtr& c) {
    constexpr size_t kChunk = 64 * 1024;
    thread_local char chunk[kChunk];
    ssize_t r;
    if (c->frame_remaining > kChunk) {
      const size_t at = c->input.size();
      c->input.resize(at + c->frame_remaining);
      r = ::recv(c->fd, c->input.data() + at, c->frame_remaining, 0);
      c->input.resize(at + static_cast<size_t>(std::max<ssize_t>(r, 0)));
    } else {
      r = ::recv(c->fd, chunk, kChunk, 0);
      if (r > 0) c->input.append(chunk, static_cast<size_t>(r));
    }
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    if (r <= 0) {
      EndReading(c);
      return;
    }
    std::vector<std::string> whole;
    size_t pos = 0;
    c->frame_remaining = 0;
    while (c->input.size() - pos >= 4) {
      Reader size_reader(std::string_view(c->input).substr(pos, 4));
      const int32_t size = size_reader.Int32();
      if (!FrameSizeAllowed(*c, size)) {
        Shut(*c);
        EndReading(c);
        return;
      }
      const size_t have = c->input.size() - pos - 4;
      if (have < static_cast<size_t>(size)) {
        c->frame_remaining = static_cast<size_t>(size) - have;
        break;
      }
      whole.emplace_back(c->input, pos + 4, static_cast<size_t>(size));
      pos += 4 + static_cast<size_t>(size);
    }
    c->input.erase(0, pos);
    if (c->input.empty() && c->input.capacity() > kChunk) std::string().swap(c->input);
    if (whole.empty()) return;
    bool start = false;
    {
      MutexLock lock(c->mu);
      if (c->closed || c->read_ended) return;
      for (std::string& frame : whole) c->frames.push_back(std::move(frame));
      c->unanswered += whole.size();
      if (c->unanswered >= kMaxAnswersInFlight) PauseReading(*c);
      start = !std::exchange(c->accepting, true);
    }
    if (start) workers_.Run([this, c] { AcceptFrames(c); });
  }

  // Up to kMaxAnswersInFlight requests are read before the oldest is answered, as a client with
  // max.in.flight.requests.per.connection > 1 expects; then the connection waits.
  void PauseReading(Connection& c) OXBOW_REQUIRES(c.mu) {
    if (!c.reading) return;
    c.reading = false;
    epoll_event event{};  // hang-ups are still reported
    event.data.fd = c.fd;
    (void)::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &event);
  }

  void ResumeReading(Connection& c) OXBOW_REQUIRES(c.mu) {
    if (c.reading || c.closed || c.read_ended || c.unanswered >= kMaxAnswersInFlight) return;
    c.reading = true;
    epoll_event event{};
    event.events = EPOLLIN | EPOLLRDHUP;
    event.data.fd = c.fd;
    (void)::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &event);
  }

  // The peer closed (or the connection was shut): the loop lets go of it; answers owed are
  // still written.
  void EndReading(const ConnectionPtr& c) {
    (void)::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c->fd, nullptr);
    Forget(c->fd);
    MutexLock lock(c->mu);
    c->read_ended = true;
    ShutIfDone(*c);
  }

  static void ShutIfDone(Connection& c) OXBOW_REQUIRES(c.mu) {
    if (c.read_ended && !c.accepting && !c.answering) ShutLocked(c);
  }

  static void Shut(Connection& c) {
    MutexLock lock(c.mu);
    ShutLocked(c);
  }

  // Ends the connection: nothing more is accepted or written. The socket closes once no task
  // holds the connection (so its number is not reused under them).
  static void ShutLocked(Connection& c) OXBOW_REQUIRES(c.mu) {
    if (c.closed) return;
    c.closed = true;
    c.frames.clear();
    c.answers.clear();
    ::shutdown(c.fd, SHUT_RDWR);
  }

  // The next item of the connection's `queue` for the task `busy` marks; nullopt, with the task
  // no longer busy, when the queue is empty or the connection shut.
  template <typename T>
  static std::optional<T> TakeNext(Connection& c, std::deque<T> Connection::*queue,
                                   bool Connection::*busy) {
    MutexLock lock(c.mu);
    if (c.closed || (c.*queue).empty()) {
      c.*busy = false;
      ShutIfDone(c);
      return std::nullopt;
    }
    T next = std::move((c.*queue).front());
    (c.*queue).pop_front();
    return next;
  }

  // Accepts one frame of the connection (its login state follows); an error, logged, means the
  // connection must close.
  Result<internal::Broker::Answer> Accept(Connection& c, std::string_view frame) {
    auto answer = broker_->Accept(frame, c.session);
    c.logged_in = c.session.user.has_value();
    if (!answer.ok()) {
      spdlog::warn("kafka: closing a connection from {}: {}", c.session.client_host,
                   answer.status().message());
    }
    return answer;
  }

  // The accepting task: accepts the connection's frames in turn and hands each answer on.
  void AcceptFrames(const ConnectionPtr& c) {
    while (std::optional<std::string> frame =
               TakeNext(*c, &Connection::frames, &Connection::accepting)) {
      auto answer = Accept(*c, *frame);
      const bool last = c->session.close_after_response;
      bool start = false;
      {
        MutexLock lock(c->mu);
        if (!answer.ok()) ShutLocked(*c);
        if (c->closed) {
          c->accepting = false;
          return;
        }
        c->answers.emplace_back(std::move(answer).ValueOrDie(), last);
        if (last) {  // nothing after it is read or accepted
          c->read_ended = true;
          c->unanswered -= c->frames.size();
          c->frames.clear();
          PauseReading(*c);
        }
        start = !std::exchange(c->answering, true);
      }
      if (start) workers_.Run([this, c] { WriteAnswers(c); });
    }
  }

  // The answering task: writes the connection's answers in turn.
  void WriteAnswers(const ConnectionPtr& c) {
    while (auto next = TakeNext(*c, &Connection::answers, &Connection::answering)) {
      const bool keep = WriteAnswer(c->stream, next->first, next->second);
      MutexLock lock(c->mu);
      if (!keep) ShutLocked(*c);
      --c->unanswered;
      ResumeReading(*c);
    }
  }

  // A TLS connection, start to end: reads a request, accepts it, writes its answer, in turn (an
  // OpenSSL stream is not shared between threads).
  void ServeTls(const ConnectionPtr& c) {
    if (c->stream.Open()) {
      std::string frame;
      while (true) {
        char size_bytes[4];
        if (!c->stream.ReadFully(size_bytes, 4)) break;
        Reader size_reader(std::string_view(size_bytes, 4));
        const int32_t size = size_reader.Int32();
        if (!FrameSizeAllowed(*c, size)) break;
        frame.resize(static_cast<size_t>(size));
        if (!c->stream.ReadFully(frame.data(), frame.size())) break;
        auto answer = Accept(*c, frame);
        if (!answer.ok()) break;
        if (!WriteAnswer(c->stream, *answer, c->session.close_after_response)) break;
      }
    }
    Shut(*c);
    Forget(c->fd);
  }

  // Writes one answer; false when the connection must close.
  static bool WriteAnswer(Stream& stream, const internal::Broker::Answer& answer, bool last) {
    auto response = answer();
    if (!response.ok()) {
      spdlog::warn("kafka: closing a connection: {}", response.status().message());
      return false;
    }
    if (response->has_value() && !stream.WriteFrame(**response)) return false;
    if (last) stream.Linger();
    return !last;
  }

  const int listen_fd_;
  const int wake_fd_;
  const int epoll_fd_;
  const int port_;
  const int32_t max_request_bytes_;
  SslCtxPtr tls_;  // null: plaintext
  std::unique_ptr<internal::Broker> broker_;
  internal::Workers workers_{{.name = "kafka-worker"}};
  std::thread loop_thread_;
  Mutex mu_;
  std::map<int, ConnectionPtr> connections_ OXBOW_GUARDED_BY(mu_);  // by socket
  bool stopped_ OXBOW_GUARDED_BY(mu_) = false;
};

}  // namespace

Result<std::unique_ptr<KafkaServer>> KafkaServer::Start(node::Node* node, KafkaOptions options) {
  if (node->producers() == nullptr || node->offsets() == nullptr) {
    return Status::Invalid(
        "the Kafka listener needs a node that keeps client state (producer sequences, group "
        "offsets): set NodeOptions::client_state_dir");
  }
  if (options.default_partitions <= 0) {
    return Status::Invalid("the default number of Kafka partitions must be positive");
  }
  ASSIGN_OR_RAISE(SslCtxPtr tls, MakeTlsContext(options));
  // OpenSSL writes to the socket without MSG_NOSIGNAL: a peer gone mid-write must not kill the
  // process.
  if (tls) ::signal(SIGPIPE, SIG_IGN);
  auto groups = std::make_unique<internal::GroupCoordinator>(node->offsets());
  int port = 0;
  ASSIGN_OR_RAISE(int listen_fd, Listen(options.listen, &port));
  const int wake_fd = ::eventfd(0, EFD_CLOEXEC);
  const int epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
  if (wake_fd < 0 || epoll_fd < 0 ||
      ::fcntl(listen_fd, F_SETFL, ::fcntl(listen_fd, F_GETFL) | O_NONBLOCK) != 0 ||
      !Watch(epoll_fd, listen_fd) || !Watch(epoll_fd, wake_fd)) {
    Status st = ErrnoToStatus(errno, "the Kafka listener's event loop", options.listen);
    for (int fd : {listen_fd, wake_fd, epoll_fd}) {
      if (fd >= 0) ::close(fd);
    }
    return st;
  }
  const int32_t max_request_bytes = options.max_request_bytes;
  auto broker =
      std::make_unique<internal::Broker>(node, std::move(options), port, std::move(groups));
  // Transactions are kept on one server: cluster mode does not serve them yet.
  if (!node->cluster()) {
    if (Status opened =
            broker->OpenTransactions(JoinPath(node->client_state_dir(), "transactions"));
        !opened.ok()) {
      for (int fd : {listen_fd, wake_fd, epoll_fd}) ::close(fd);
      return opened.WithContext("the Kafka transaction coordinator");
    }
  }
  return std::unique_ptr<KafkaServer>(new TcpKafkaServer(
      listen_fd, wake_fd, epoll_fd, port, max_request_bytes, std::move(tls), std::move(broker)));
}

}  // namespace oxbow::kafka
