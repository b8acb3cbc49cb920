// The TCP side of the Kafka listener: one thread accepts; per connection one thread reads
// size-prefixed request frames and accepts them, another writes the answers back in order
// (one thread does both over TLS).
// OpenSSL's errors are translated here.
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <list>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>

#include "oxbow/common/file_system.h"
#include "oxbow/kafka/broker_internal.h"

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

// One accepted connection: plain TCP, or TLS over it.
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

  // Reads exactly n bytes; false on EOF or error.
  bool ReadFully(char* out, size_t n) {
    while (n > 0) {
      size_t got = 0;
      if (ssl_) {
        if (SSL_read_ex(ssl_.get(), out, n, &got) != 1) {
          ERR_clear_error();
          return false;
        }
      } else {
        const ssize_t r = ::recv(fd_, out, n, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        got = static_cast<size_t>(r);
      }
      out += got;
      n -= got;
    }
    return true;
  }

  bool WriteFully(const char* data, size_t n) {
    while (n > 0) {
      size_t sent = 0;
      if (ssl_) {
        if (SSL_write_ex(ssl_.get(), data, n, &sent) != 1) {
          ERR_clear_error();
          return false;
        }
      } else {
        const ssize_t r = ::send(fd_, data, n, MSG_NOSIGNAL);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        sent = static_cast<size_t>(r);
      }
      data += sent;
      n -= sent;
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
      if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) <= 0 ||
          ::recv(fd_, discard, sizeof(discard), 0) <= 0) {
        return;
      }
    }
  }

 private:
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

class TcpKafkaServer : public KafkaServer {
 public:
  TcpKafkaServer(int listen_fd, int wake_fd, int port, int32_t max_request_bytes, SslCtxPtr tls,
                 std::unique_ptr<internal::Broker> broker)
      : listen_fd_(listen_fd),
        wake_fd_(wake_fd),
        port_(port),
        max_request_bytes_(max_request_bytes),
        tls_(std::move(tls)),
        broker_(std::move(broker)) {
    accept_thread_ = std::thread([this] { AcceptLoop(); });
  }
  ~TcpKafkaServer() override { Stop(); }

  int port() const override { return port_; }

  void Stop() override {
    {
      std::lock_guard lock(mu_);
      if (stopped_) return;
      stopped_ = true;
      for (auto& c : connections_) ::shutdown(c.fd, SHUT_RDWR);
    }
    broker_->Stop();
    const uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof(one));
    accept_thread_.join();
    for (auto& c : connections_) c.thread.join();
    for (auto& c : connections_) ::close(c.fd);
    connections_.clear();
    ::close(listen_fd_);
    ::close(wake_fd_);
  }

 private:
  struct Connection {
    int fd;
    std::thread thread;
    std::atomic<bool> done{false};
  };

  void AcceptLoop() {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    while (true) {
      // Wakes once a second at least, to join the threads of closed connections.
      if (::poll(fds, 2, 1000) < 0 && errno != EINTR) break;
      if (fds[1].revents != 0) break;
      broker_->node()->producers()->SaveIfDue();  // the node saves them at close too
      if ((fds[0].revents & POLLIN) == 0) {
        std::lock_guard lock(mu_);
        ReapFinished();
        continue;
      }
      const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      const int one = 1;
      (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      std::lock_guard lock(mu_);
      if (stopped_) {
        ::close(fd);
        break;
      }
      ReapFinished();
      Connection& c = connections_.emplace_back();
      c.fd = fd;
      try {
        c.thread = std::thread([this, &c] {
          Serve(c.fd);
          c.done = true;
        });
      } catch (const std::system_error& e) {
        // Out of threads (or memory for a stack): refuse this connection, keep the others.
        spdlog::warn("kafka: refusing a connection: cannot start its thread: {} ({} open)",
                     e.what(), connections_.size() - 1);
        ::close(fd);
        connections_.pop_back();
      }
    }
  }

  // Joins the threads of closed connections (mu_ held).
  void ReapFinished() {
    for (auto it = connections_.begin(); it != connections_.end();) {
      if (it->done) {
        it->thread.join();
        ::close(it->fd);
        it = connections_.erase(it);
      } else {
        ++it;
      }
    }
  }

  // Reads requests and accepts each in turn; answers go out in request order. While the oldest
  // answer waits (a Produce for its replicas), up to kMaxAnswersInFlight later requests are
  // read and accepted, as a client with max.in.flight.requests.per.connection > 1 expects.
  // Under TLS one thread does both: an SSL stream is not shared between threads.
  void Serve(int fd) {
    internal::Session session;
    session.client_host = PeerHost(fd);
    Stream stream(fd, tls_.get());
    if (!stream.Open()) {
      ::shutdown(fd, SHUT_RDWR);
      return;
    }
    AnswerQueue answers;
    std::thread writer;  // started by the first request: an idle connection costs one thread
    std::string frame;
    while (true) {
      char size_bytes[4];
      if (!stream.ReadFully(size_bytes, 4)) break;
      Reader size_reader(std::string_view(size_bytes, 4));
      const int32_t size = size_reader.Int32();
      const int32_t limit = broker_->auth_required() && !session.user
                                ? std::min(max_request_bytes_, kMaxUnauthenticatedRequestBytes)
                                : max_request_bytes_;
      if (size < 0 || size > limit) {
        spdlog::warn("kafka: closing a connection that sent a {} byte request (limit {})", size,
                     limit);
        break;
      }
      frame.resize(static_cast<size_t>(size));
      if (!stream.ReadFully(frame.data(), frame.size())) break;
      auto answer = broker_->Accept(frame, session);
      if (!answer.ok()) {
        spdlog::warn("kafka: closing a connection from {}: {}", session.client_host,
                     answer.status().message());
        break;
      }
      const bool last = session.close_after_response;
      if (tls_) {
        if (!WriteAnswer(stream, *answer, last)) break;
        continue;
      }
      if (!writer.joinable()) {
        try {
          writer = std::thread([&] { WriteAnswers(stream, answers, fd); });
        } catch (const std::system_error& e) {
          spdlog::warn("kafka: closing a connection from {}: cannot start its writer: {}",
                       session.client_host, e.what());
          break;
        }
      }
      if (!answers.Push(std::move(answer).ValueOrDie(), last)) break;
      if (last) break;
    }
    answers.Close();
    if (writer.joinable()) writer.join();
    ::shutdown(fd, SHUT_RDWR);
  }

  // The answers a connection still owes, oldest first.
  class AnswerQueue {
   public:
    // Waits for room; false once the connection is closing.
    bool Push(internal::Broker::Answer answer, bool last) {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return closed_ || queue_.size() < kMaxAnswersInFlight; });
      if (closed_) return false;
      queue_.push_back({std::move(answer), last});
      cv_.notify_all();
      return true;
    }
    // The oldest answer; nullopt once closed and empty.
    std::optional<std::pair<internal::Broker::Answer, bool>> Pop() {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return closed_ || !queue_.empty(); });
      if (queue_.empty()) return std::nullopt;
      auto front = std::move(queue_.front());
      queue_.pop_front();
      cv_.notify_all();
      return front;
    }
    // No more answers are pushed; the writer writes those queued.
    void Close() {
      std::lock_guard lock(mu_);
      closed_ = true;
      cv_.notify_all();
    }
    // The writer failed: drop what is queued and stop the reader.
    void Abandon() {
      std::lock_guard lock(mu_);
      closed_ = true;
      queue_.clear();
      cv_.notify_all();
    }

   private:
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<std::pair<internal::Broker::Answer, bool>> queue_;
    bool closed_ = false;
  };

  void WriteAnswers(Stream& stream, AnswerQueue& answers, int fd) {
    while (auto next = answers.Pop()) {
      if (!WriteAnswer(stream, next->first, next->second)) {
        answers.Abandon();
        ::shutdown(fd, SHUT_RDWR);  // the reader stops too
        return;
      }
    }
  }

  // Writes one answer; false when the connection must close.
  bool WriteAnswer(Stream& stream, const internal::Broker::Answer& answer, bool last) {
    auto response = answer();
    if (!response.ok()) {
      spdlog::warn("kafka: closing a connection: {}", response.status().message());
      return false;
    }
    if (response->has_value()) {
      Writer prefix;
      prefix.Int32(static_cast<int32_t>((*response)->size()));
      if (!stream.WriteFully(prefix.buffer().data(), 4) ||
          !stream.WriteFully((*response)->data(), (*response)->size())) {
        return false;
      }
    }
    if (last) stream.Linger();
    return !last;
  }

  const int listen_fd_;
  const int wake_fd_;
  const int port_;
  const int32_t max_request_bytes_;
  SslCtxPtr tls_;  // null: plaintext
  std::unique_ptr<internal::Broker> broker_;
  std::thread accept_thread_;
  std::mutex mu_;
  std::list<Connection> connections_;  // guarded by mu_ (stable addresses for their threads)
  bool stopped_ = false;
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
  if (wake_fd < 0) {
    ::close(listen_fd);
    return ErrnoToStatus(errno, "eventfd", options.listen);
  }
  const int32_t max_request_bytes = options.max_request_bytes;
  auto broker =
      std::make_unique<internal::Broker>(node, std::move(options), port, std::move(groups));
  return std::unique_ptr<KafkaServer>(new TcpKafkaServer(
      listen_fd, wake_fd, port, max_request_bytes, std::move(tls), std::move(broker)));
}

}  // namespace oxbow::kafka
