// The TCP side of the Kafka listener: one thread accepts, one thread per connection reads
// size-prefixed request frames and writes the responses back in order.
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <list>
#include <thread>

#include "oxbow/common/file_system.h"
#include "oxbow/kafka/broker_internal.h"

namespace oxbow::kafka {
namespace {

// Reads exactly n bytes; false on EOF or error.
bool ReadFully(int fd, char* out, size_t n) {
  while (n > 0) {
    const ssize_t got = ::recv(fd, out, n, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    out += got;
    n -= static_cast<size_t>(got);
  }
  return true;
}

bool WriteFully(int fd, const char* data, size_t n) {
  while (n > 0) {
    const ssize_t sent = ::send(fd, data, n, MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    if (sent <= 0) return false;
    data += sent;
    n -= static_cast<size_t>(sent);
  }
  return true;
}

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
  TcpKafkaServer(int listen_fd, int wake_fd, int port, int32_t max_request_bytes,
                 std::unique_ptr<internal::Broker> broker)
      : listen_fd_(listen_fd),
        wake_fd_(wake_fd),
        port_(port),
        max_request_bytes_(max_request_bytes),
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
    if (Status st = broker_->SaveProducerState(); !st.ok()) {
      spdlog::error("kafka: saving the idempotent producers' state: {}", st.message());
    }
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
      c.thread = std::thread([this, &c] {
        Serve(c.fd);
        c.done = true;
      });
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

  void Serve(int fd) {
    const std::string peer = PeerHost(fd);
    std::string frame;
    while (true) {
      char size_bytes[4];
      if (!ReadFully(fd, size_bytes, 4)) break;
      Reader size_reader(std::string_view(size_bytes, 4));
      const int32_t size = size_reader.Int32();
      if (size < 0 || size > max_request_bytes_) {
        spdlog::warn("kafka: closing a connection that sent a {} byte request (limit {})", size,
                     max_request_bytes_);
        break;
      }
      frame.resize(static_cast<size_t>(size));
      if (!ReadFully(fd, frame.data(), frame.size())) break;
      auto response = broker_->Handle(frame, peer);
      if (!response.ok()) {
        spdlog::warn("kafka: closing a connection: {}", response.status().message());
        break;
      }
      if (!response->has_value()) continue;
      Writer prefix;
      prefix.Int32(static_cast<int32_t>((*response)->size()));
      if (!WriteFully(fd, prefix.buffer().data(), 4) ||
          !WriteFully(fd, (*response)->data(), (*response)->size())) {
        break;
      }
    }
    ::shutdown(fd, SHUT_RDWR);
  }

  const int listen_fd_;
  const int wake_fd_;
  const int port_;
  const int32_t max_request_bytes_;
  std::unique_ptr<internal::Broker> broker_;
  std::thread accept_thread_;
  std::mutex mu_;
  std::list<Connection> connections_;  // guarded by mu_ (stable addresses for their threads)
  bool stopped_ = false;
};

}  // namespace

Result<std::unique_ptr<KafkaServer>> KafkaServer::Start(node::Node* node, KafkaOptions options) {
  if (options.state_dir.empty()) {
    return Status::Invalid("the Kafka listener needs a state dir for group offsets");
  }
  if (options.default_partitions <= 0) {
    return Status::Invalid("the default number of Kafka partitions must be positive");
  }
  ASSIGN_OR_RAISE(auto groups,
                  internal::GroupCoordinator::Open(PosixFileSystem::Default(), options.state_dir));
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
  if (Status st = broker->LoadProducerState(); !st.ok()) {
    ::close(listen_fd);
    ::close(wake_fd);
    return st;
  }
  return std::unique_ptr<KafkaServer>(
      new TcpKafkaServer(listen_fd, wake_fd, port, max_request_bytes, std::move(broker)));
}

}  // namespace oxbow::kafka
