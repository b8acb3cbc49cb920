// The console's routes: its pages, and the JSON API they read (docs/console.md#the-json-api).
// service.cc routes and logs in; the pages' answers are in server_api.cc (overview, cluster),
// table_api.cc (tables, a table, its rows, lookups, lake, properties) and kafka_api.cc.
#pragma once

#include <nlohmann/json.hpp>

#include "oxbow/console/console.h"
#include "oxbow/console/history_internal.h"

namespace oxbow::console::internal {

using json = nlohmann::json;

http::Response Json(int status, const json& body);
// {"error": message} with `status`.
http::Response Problem(int status, const std::string& message);
// `status` as its HTTP answer: 400 Invalid, 403 PermissionDenied, 404 NotFound, 409 Aborted or
// AlreadyExists, 503 Unavailable, 500 otherwise.
http::Response ProblemOf(const Status& status);
// "log" or "primary_key".
const char* KindOf(const catalog::TableDescriptor& table);

// What buckets hold: log records (rows of a log table, changes of a primary-key table) and
// their bytes.
struct LogSize {
  int64_t records = 0;
  int64_t bytes = 0;
};
LogSize LogSizeOf(const std::vector<engine::BucketStatus>& buckets);

class Service {
 public:
  // `node`, `history` and options.kafka must outlive the service.
  Service(node::Node* node, const History* history, const ConsoleOptions& options)
      : node_(node),
        history_(history),
        authenticator_(options.authenticator),
        kafka_(options.kafka),
        data_dir_(options.data_dir) {}
  http::Response Handle(const http::Request& request) const;

  // What Sample() the History calls: the node's totals and its lake tables' lag now.
  static Sample SampleOf(node::Node* node);

 private:
  // `user` is null without --auth.
  http::Response Api(const auth::User* user, const http::Request& request,
                     const std::vector<std::string>& path) const;
  // GET /api/overview and /api/cluster.
  http::Response Overview(const auth::User* user) const;
  http::Response Cluster(const auth::User* user) const;
  // GET /api/tables?filter=&offset=&limit=, /api/tables/{name}, its /rows, /lookup and /lake.
  http::Response Tables(const auth::User* user, const http::Request& request) const;
  http::Response TablePage(const std::string& name) const;
  http::Response Rows(const std::string& name, const http::Request& request) const;
  http::Response Lookup(const std::string& name, const http::Request& request) const;
  http::Response Lake(const std::string& name, const http::Request& request) const;
  // POST /api/tables/{name}/properties (admin).
  http::Response AlterProperties(const std::string& name, const http::Request& request) const;
  // GET /api/kafka.
  http::Response Kafka(const auth::User* user) const;

  node::Node* const node_;
  const History* const history_;
  auth::Authenticator* const authenticator_;
  kafka::KafkaServer* const kafka_;
  const std::string data_dir_;
};

}  // namespace oxbow::console::internal
