#include <httplib.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <filesystem>

#include "oxbow/common/parse.h"
#include "oxbow/http/http.h"

namespace oxbow::http {

Result<std::pair<std::string, int>> ParseListen(std::string_view what, const std::string& listen) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return Status::Invalid(std::string(what) + " listen address " + Quote(listen) +
                           " is not host:port");
  }
  std::string host = listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  auto port = ParseInt32(std::string_view(listen).substr(colon + 1));
  if (!port.ok() || *port < 0 || *port > 65535) {
    return Status::Invalid(std::string(what) + " listen address " + Quote(listen) +
                           " has no valid port");
  }
  return std::make_pair(std::move(host), static_cast<int>(*port));
}

namespace {

Result<std::unique_ptr<httplib::Server>> MakeServer(std::string_view what, const TlsOptions& tls) {
  if (tls.cert_file.empty() != tls.key_file.empty()) {
    return Status::Invalid("TLS of " + std::string(what) + " needs both a certificate and a key");
  }
  if (!tls.enabled()) {
    if (!tls.client_ca_file.empty()) {
      return Status::Invalid("a client CA for " + std::string(what) +
                             " needs a certificate and a key");
    }
    return std::make_unique<httplib::Server>();
  }
  for (const std::string* file : {&tls.cert_file, &tls.key_file, &tls.client_ca_file}) {
    std::error_code ec;
    if (!file->empty() && !std::filesystem::is_regular_file(*file, ec)) {
      return Status::Invalid("TLS file " + Quote(*file) + " of " + std::string(what) +
                             " is not a readable file");
    }
  }
  auto server = std::make_unique<httplib::SSLServer>(
      tls.cert_file.c_str(), tls.key_file.c_str(),
      tls.client_ca_file.empty() ? nullptr : tls.client_ca_file.c_str());
  if (!server->is_valid()) {
    return Status::Invalid("TLS of " + std::string(what) +
                           ": the certificate, key or client CA file is not valid PEM, or the key "
                           "does not match the certificate");
  }
  return std::unique_ptr<httplib::Server>(std::move(server));
}

}  // namespace

Result<std::unique_ptr<Listener>> Listener::Start(
    std::string_view what, const std::string& listen, const TlsOptions& tls,
    const std::function<void(httplib::Server&)>& routes) {
  ASSIGN_OR_RAISE(auto address, ParseListen(what, listen));
  std::unique_ptr<Listener> listener(new Listener());
  ASSIGN_OR_RAISE(listener->server_, MakeServer(what, tls));
  httplib::Server& http = *listener->server_;
  // cpp-httplib shares ports (SO_REUSEPORT) by default; a second oxbowd on a busy port must fail.
  http.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  routes(http);
  const auto& [host, port] = address;
  if (port == 0) {
    listener->port_ = http.bind_to_any_port(host);
  } else if (http.bind_to_port(host, port)) {
    listener->port_ = port;
  }
  if (listener->port_ <= 0) {
    return Status::IOError("cannot listen for " + std::string(what) + " on " + listen +
                           " (address in use, or not a valid host?)");
  }
  auto ended = std::make_shared<std::atomic<bool>>(false);
  listener->thread_ = std::thread([&http, ended] {
    http.listen_after_bind();
    ended->store(true);
  });
  // stop() only takes effect once the accept loop runs, so Stop() must not come before it.
  while (!http.is_running() && !ended->load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (ended->load()) {
    listener->thread_.join();
    return Status::IOError("the listener for " + std::string(what) + " on " + listen +
                           " ended at once");
  }
  return listener;
}

Result<std::unique_ptr<Listener>> Listener::Serve(std::string_view what, const std::string& listen,
                                                  const TlsOptions& tls, Service service) {
  auto shared = std::make_shared<const Service>(std::move(service));
  auto routes = [&shared, what = std::string(what)](httplib::Server& http) {
    auto serve = [shared](const httplib::Request& req, httplib::Response& res) {
      Request request;
      request.method = req.method;
      request.path = req.target.substr(0, req.target.find('?'));
      request.query.insert(req.params.begin(), req.params.end());
      request.authorization = req.get_header_value("Authorization");
      request.content_type = req.get_header_value("Content-Type");
      request.body = req.body;
      Response response = shared->handle(request);
      res.status = response.status;
      for (const auto& [name, value] : response.headers) res.set_header(name, value);
      if (!response.body.empty()) res.set_content(response.body, response.content_type);
    };
    // Every path of every method reaches the service, which routes on the raw request-target.
    const std::string kAnyPath = R"([\s\S]*)";
    http.Get(kAnyPath, serve);  // and HEAD
    http.Post(kAnyPath, serve);
    http.Put(kAnyPath, serve);
    http.Patch(kAnyPath, serve);
    http.Delete(kAnyPath, serve);
    http.Options(kAnyPath, serve);
    http.set_payload_max_length(shared->max_body_bytes);
    http.set_keep_alive_max_count(1);
    http.set_error_handler(httplib::Server::HandlerWithResponse(
        [shared](const httplib::Request& req, httplib::Response& res) {
          if (!res.body.empty() || req.method == "HEAD") {
            return httplib::Server::HandlerResponse::Unhandled;
          }
          // A request line too long to read (414) leaves method and target empty.
          const std::string happened =
              !req.method.empty() ? req.method + " " + req.target
              : res.status == 414 ? "a request whose URI is longer than " +
                                        std::to_string(CPPHTTPLIB_REQUEST_URI_MAX_LENGTH) + " bytes"
                                  : "a request that could not be read";
          Response error =
              shared->error(res.status, "HTTP " + std::to_string(res.status) + " for " + happened);
          res.set_content(error.body, error.content_type);
          return httplib::Server::HandlerResponse::Handled;
        }));
    http.set_exception_handler([shared, what](const httplib::Request&, httplib::Response& res,
                                              std::exception_ptr exception) {
      std::string happened = "unknown exception";
      try {
        std::rethrow_exception(exception);
      } catch (const std::exception& e) {
        happened = e.what();
      } catch (...) {
      }
      spdlog::error("{}: request failed: {}", what, happened);
      Response error = shared->error(500, happened);
      res.status = 500;
      res.set_content(error.body, error.content_type);
    });
  };
  return Start(what, listen, tls, routes);
}

Result<Response> Call(const std::string& base_url, const std::string& method,
                      const std::string& path, const std::string& body,
                      const std::string& authorization, const std::string& ca_file) {
  httplib::Client client(base_url);
  if (!client.is_valid()) return Status::Invalid("not an http:// or https:// URL: " + base_url);
  if (!ca_file.empty()) client.set_ca_cert_path(ca_file);
  client.set_connection_timeout(10);
  client.set_read_timeout(60);
  httplib::Headers headers;
  if (!authorization.empty()) headers.emplace("Authorization", authorization);
  httplib::Request request;
  request.method = method;
  request.path = path;
  request.headers = headers;
  if (!body.empty()) {
    request.body = body;
    request.set_header("Content-Type", "application/json");
  }
  httplib::Response answer;
  httplib::Error error = httplib::Error::Success;
  if (!client.send(request, answer, error)) {
    return Status::IOError(method + " " + base_url + path + ": " + httplib::to_string(error));
  }
  Response response;
  response.status = answer.status;
  response.body = answer.body;
  response.content_type = answer.get_header_value("Content-Type");
  return response;
}

Listener::~Listener() { Stop(); }

void Listener::Stop() {
  if (!thread_.joinable()) return;
  server_->stop();
  thread_.join();
}

std::optional<std::vector<std::string>> PathSegments(const std::string& path) {
  std::vector<std::string> out;
  size_t start = 1;
  while (start <= path.size()) {
    const size_t end = std::min(path.find('/', start), path.size());
    std::string segment;
    for (size_t i = start; i < end; ++i) {
      if (path[i] != '%') {
        segment += path[i];
        continue;
      }
      if (i + 2 >= end || !std::isxdigit(static_cast<unsigned char>(path[i + 1])) ||
          !std::isxdigit(static_cast<unsigned char>(path[i + 2]))) {
        return std::nullopt;
      }
      segment += static_cast<char>(std::stoi(path.substr(i + 1, 2), nullptr, 16));
      i += 2;
    }
    if (!segment.empty() || end < path.size()) out.push_back(std::move(segment));
    start = end + 1;
  }
  return out;
}

}  // namespace oxbow::http
