#include "oxbow/console/console.h"

#include "oxbow/console/service_internal.h"

namespace oxbow::console {

ConsoleServer::ConsoleServer() = default;

Result<std::unique_ptr<ConsoleServer>> ConsoleServer::Start(node::Node* node,
                                                            ConsoleOptions options) {
  std::unique_ptr<ConsoleServer> server(new ConsoleServer());
  server->history_ = std::make_unique<internal::History>(
      [node] { return internal::Service::SampleOf(node); }, options.sample_interval);
  auto service = std::make_shared<const internal::Service>(node, server->history_.get(), options);
  http::Service http_service;
  http_service.handle = [service](const http::Request& request) {
    return service->Handle(request);
  };
  http_service.error = internal::Problem;
  ASSIGN_OR_RAISE(server->listener_, http::Listener::Serve("the console", options.listen,
                                                           options.tls, std::move(http_service)));
  return server;
}

ConsoleServer::~ConsoleServer() { Stop(); }

void ConsoleServer::Stop() {
  if (listener_) listener_->Stop();
  history_.reset();
}

}  // namespace oxbow::console
