// The console's routes: its pages, and the JSON API they read (docs/console.md#the-json-api).
#pragma once

#include <nlohmann/json.hpp>

#include "oxbow/console/console.h"
#include "oxbow/console/history_internal.h"

namespace oxbow::console::internal {

class Service {
 public:
  // `node` and `history` must outlive the service.
  Service(node::Node* node, const History* history, const ConsoleOptions& options)
      : node_(node),
        history_(history),
        authenticator_(options.authenticator),
        data_dir_(options.data_dir) {}
  http::Response Handle(const http::Request& request) const;

  // What Sample() the History calls: the node's totals and its lake tables' lag now.
  static Sample SampleOf(node::Node* node);

 private:
  // GET /api/overview, /api/tables, /api/tables/{name}; `user` null without --auth.
  http::Response Overview(const auth::User* user) const;
  http::Response Tables(const auth::User* user) const;
  http::Response TablePage(const auth::User* user, const std::string& name) const;

  node::Node* const node_;
  const History* const history_;
  auth::Authenticator* const authenticator_;
  const std::string data_dir_;
};

}  // namespace oxbow::console::internal
