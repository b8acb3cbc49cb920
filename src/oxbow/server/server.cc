#include "oxbow/server/server.h"

#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "oxbow/common/file_system.h"
#include "oxbow/server/flight_service.h"
#include "oxbow/server/registry_seams.h"

namespace oxbow::server {

namespace {

// Plaintext, or TLS (and mutual TLS) from the PEM files the options name.
Result<std::shared_ptr<grpc::ServerCredentials>> Credentials(const ServerOptions& options) {
  if (options.tls_cert_file.empty() != options.tls_key_file.empty()) {
    return Status::Invalid("TLS needs both --tls-cert and --tls-key");
  }
  if (options.tls_cert_file.empty()) {
    if (!options.tls_client_ca_file.empty()) {
      return Status::Invalid("--tls-client-ca needs --tls-cert and --tls-key");
    }
    return grpc::InsecureServerCredentials();
  }
  auto fs = PosixFileSystem::Default();
  auto read = [&](const std::string& path, const char* what) -> Result<std::string> {
    auto bytes = ReadWholeFile(*fs, path);
    if (!bytes.ok()) return bytes.status().WithContext(std::string("reading the TLS ") + what);
    return std::string((*bytes)->view());
  };
  grpc::SslServerCredentialsOptions ssl;
  grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  ASSIGN_OR_RAISE(pair.cert_chain, read(options.tls_cert_file, "certificate"));
  ASSIGN_OR_RAISE(pair.private_key, read(options.tls_key_file, "key"));
  ssl.pem_key_cert_pairs.push_back(std::move(pair));
  if (!options.tls_client_ca_file.empty()) {
    ASSIGN_OR_RAISE(ssl.pem_root_certs, read(options.tls_client_ca_file, "client CA"));
    ssl.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(ssl);
}

bool IsLoopback(const std::string& listen) {
  const std::string host = listen.substr(0, listen.rfind(':'));
  return host == "localhost" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

// `what` the listener is, `exposed` what anyone reaching it could do.
Status RefuseUnauthenticated(const std::string& listen, std::string_view what,
                             std::string_view exposed) {
  return Status::Invalid("refusing to listen on " + listen + " (" + std::string(what) +
                         ") without authentication: anyone who reaches it could " +
                         std::string(exposed) +
                         "; add users with `oxbow user add` and pass --auth, or pass "
                         "--allow-unauthenticated to accept that");
}

// Refuses to serve every table to anyone who can reach a non-loopback address.
Status CheckExposure(const ServerOptions& options) {
  if (!options.auth) {
    if (options.metrics_auth == "on") {
      return Status::Invalid(
          "--metrics-auth on needs --auth: the scrape user comes from the "
          "users of --auth");
    }
    if (!options.allow_unauthenticated) {
      if (!IsLoopback(options.listen)) {
        return RefuseUnauthenticated(options.listen, "Flight", "read, write and drop every table");
      }
      // The catalog's own bearer token (--catalog-token) is authentication too.
      if (!options.catalog.listen.empty() && options.catalog.token.empty() &&
          !IsLoopback(options.catalog.listen)) {
        return RefuseUnauthenticated(options.catalog.listen, "the REST catalog",
                                     "read every table in the lake");
      }
      if (!options.kafka.listen.empty() && !IsLoopback(options.kafka.listen)) {
        return RefuseUnauthenticated(options.kafka.listen, "Kafka",
                                     "read, write and drop every table");
      }
      if (!options.schema_registry.listen.empty() && !IsLoopback(options.schema_registry.listen)) {
        return RefuseUnauthenticated(options.schema_registry.listen, "the schema registry",
                                     "register and delete every schema");
      }
      if (!options.console.listen.empty() && !IsLoopback(options.console.listen)) {
        return RefuseUnauthenticated(options.console.listen, "the console",
                                     "see every table and its figures");
      }
    }
    return Status::OK();
  }
  if (!options.catalog.token.empty()) {
    return Status::Invalid(
        "--catalog-token and --auth exclude each other: under --auth the REST catalog takes the "
        "users' tokens and passwords");
  }
  return Status::OK();
}

// Under --auth, checks that authentication has someone to authenticate and that the users file
// is kept private.
Result<std::unique_ptr<auth::Authenticator>> MakeAuthenticator(const ServerOptions& options,
                                                               std::string server_secret) {
  if (!options.auth) return std::unique_ptr<auth::Authenticator>();
  auto fs = PosixFileSystem::Default();
  const std::string path = auth::UserStore::PathIn(options.node.engine.data_dir);
  RETURN_NOT_OK(auth::UserStore::CheckPrivate(path));
  ASSIGN_OR_RAISE(auto users, auth::UserStore::Load(fs, path));
  if (users.users().empty()) {
    return Status::Invalid(
        "--auth needs at least one user in " + path +
        ": add one with `oxbow user add --data-dir <dir> <name> --grant '*=admin'`");
  }
  if (options.token_lifetime_s < 1) {
    return Status::Invalid("--auth-token-lifetime-s must be at least 1");
  }
  return std::make_unique<auth::Authenticator>(fs, path,
                                               std::chrono::seconds(options.token_lifetime_s),
                                               auth::LoginLimit{}, std::move(server_secret));
}

// The scrapes /metrics answers (ServerOptions::metrics_auth): any, or those of a user granted
// "*", since the page names every table.
metrics::ScrapeAuthorizer ScrapeAuthorizer(const ServerOptions& options,
                                           auth::Authenticator* authenticator) {
  if (!authenticator || !MetricsLoginRequired(options)) return {};
  return [authenticator](std::string_view authorization) -> Status {
    ASSIGN_OR_RAISE(auth::User user, authenticator->VerifyHeader(authorization));
    const bool every_table = std::any_of(user.grants.begin(), user.grants.end(),
                                         [](const auth::Grant& g) { return g.tables == "*"; });
    if (every_table) return Status::OK();
    return Status::PermissionDenied("user " + Quote(user.name) +
                                    " may not read the metrics: they name every table, so a "
                                    "scrape needs a grant on '*' (e.g. '*=read')");
  };
}

}  // namespace

// Cluster mode: what this server advertises, and what part 1 does not serve yet.
static Status PrepareClusterOptions(ServerOptions* options) {
  cluster::ClusterOptions& cluster = options->node.cluster;
  if (cluster.zookeeper.empty()) return Status::OK();
  if (options->auth || !options->tls_cert_file.empty()) {
    return Status::NotImplemented(
        "cluster mode does not yet combine with --auth or TLS: servers fetch from each other "
        "without credentials (docs/cluster.md#limits)");
  }
  if (cluster.advertised_flight.empty()) {
    if (options->listen.ends_with(":0")) {
      return Status::Invalid("cluster mode needs a fixed --listen port or --advertised-flight");
    }
    cluster.advertised_flight = "grpc://" + options->listen;
  }
  if (cluster.advertised_kafka.empty() && !options->kafka.listen.empty()) {
    const std::string& listen = options->kafka.listen;
    const std::string port = listen.substr(listen.rfind(':') + 1);
    const std::string host = options->kafka.advertised_host.empty()
                                 ? listen.substr(0, listen.rfind(':'))
                                 : options->kafka.advertised_host;
    cluster.advertised_kafka = host + ":" + port;
  }
  return Status::OK();
}

bool MetricsLoginRequired(const ServerOptions& options) {
  return options.metrics_auth == "on" ||
         (options.metrics_auth == "auto" && options.auth && !IsLoopback(options.metrics_listen));
}

Result<std::unique_ptr<Server>> Server::Start(ServerOptions options) {
  ASSIGN_OR_RAISE(auto credentials, Credentials(options));
  if (options.metrics_tls && options.tls_cert_file.empty()) {
    return Status::Invalid("--metrics-tls needs --tls-cert and --tls-key");
  }
  RETURN_NOT_OK(CheckExposure(options));
  ASSIGN_OR_RAISE(
      std::string server_secret,
      auth::LoadOrCreateServerSecret(*PosixFileSystem::Default(), options.node.engine.data_dir));
  ASSIGN_OR_RAISE(auto authenticator, MakeAuthenticator(options, server_secret));
  std::unique_ptr<Server> server(new Server());
  server->authenticator_ = std::move(authenticator);
  if (!options.kafka.listen.empty()) {
    // Kafka's producer sequences and group offsets (docs/data-dir.md).
    options.node.client_state_dir = JoinPath(options.node.engine.data_dir, "kafka");
    options.node.may_hold_producers = kafka::MayHoldProducers;
    options.node.table_for_topic = kafka::TableForTopic;
  }
  if (!options.metrics_listen.empty()) {
    Server* s = server.get();
    ASSIGN_OR_RAISE(
        server->metrics_server_,
        metrics::MetricsServer::Start(
            options.metrics_listen,
            options.metrics_tls ? http::TlsOptions{options.tls_cert_file, options.tls_key_file, ""}
                                : http::TlsOptions{},
            [s] { return s->ready_ ? s->node_->MetricsPage() : std::string(); },
            [s] { return s->ready_.load(); },
            ScrapeAuthorizer(options, server->authenticator_.get())));
  }
  RETURN_NOT_OK(PrepareClusterOptions(&options));
  const std::string data_dir = options.node.engine.data_dir;  // options.node moves on
  ASSIGN_OR_RAISE(server->node_, node::Node::Open(std::move(options.node)));
  server->service_ =
      std::make_unique<FlightService>(server->node_.get(), server->authenticator_.get());
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.listen, credentials, &server->port_);
  builder.RegisterService(server->service_.get());
  builder.SetMaxReceiveMessageSize(-1);
  builder.SetMaxSendMessageSize(-1);
  // gRPC shares ports (SO_REUSEPORT) by default; a second oxbowd on a busy port must fail.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  server->grpc_server_ = builder.BuildAndStart();
  if (!server->grpc_server_ || server->port_ == 0) {
    (void)server->node_->Close();
    return Status::IOError("cannot listen on " + options.listen +
                           " (address in use, not a valid host:port, or a TLS certificate and "
                           "key that do not match?)");
  }
  // Before Kafka, whose avro-confluent tables take their schema ids from it.
  if (!options.schema_registry.listen.empty()) {
    auto& registry = options.schema_registry;
    registry.dir = JoinPath(data_dir, "schema-registry");
    registry.tls = {options.tls_cert_file, options.tls_key_file, options.tls_client_ca_file};
    registry.authenticator = server->authenticator_.get();
    server->table_subjects_ = std::make_unique<NodeTableSubjects>(server->node_.get());
    registry.tables = server->table_subjects_.get();
    if (server->node_->cluster()) {  // every server serves the same registry, from ZooKeeper
      server->registry_store_ = std::make_unique<ClusterRegistryStore>(server->node_->cluster());
      registry.store = server->registry_store_.get();
    }
    registry.table_of_subject = [](std::string_view subject) -> std::optional<std::string> {
      const auto named = TopicOfSubject(subject);
      if (!named) return std::nullopt;
      auto table = kafka::TableForTopic(named->first);
      return table.ok() ? std::optional<std::string>(*table) : std::nullopt;
    };
    auto started = registry::SchemaRegistryServer::Start(std::move(registry));
    if (!started.ok()) {
      (void)server->Shutdown();
      return started.status().WithContext("the schema registry");
    }
    server->schema_registry_ = std::move(started).ValueOrDie();
    server->schema_ids_ = std::make_unique<RegistrySchemaIds>(server->schema_registry_.get());
  }
  if (!options.kafka.listen.empty()) {
    // The same users and the same certificate as Flight (docs/security.md#kafka).
    options.kafka.authenticator = server->authenticator_.get();
    // Topic ids derive from the secret: in a cluster every server must give the same ones.
    options.kafka.server_secret =
        server->node_->cluster() ? server->node_->cluster()->cluster_secret() : server_secret;
    options.kafka.tls_cert_file = options.tls_cert_file;
    options.kafka.tls_key_file = options.tls_key_file;
    options.kafka.tls_client_ca_file = options.tls_client_ca_file;
    options.kafka.default_retention_ms = options.node.engine.log.retention_ms;
    options.kafka.default_retention_bytes = options.node.engine.log.retention_bytes;
    options.kafka.default_segment_bytes = options.node.engine.log.segment_bytes;
    options.kafka.schema_ids = server->schema_ids_.get();
    auto kafka = kafka::KafkaServer::Start(server->node_.get(), options.kafka);
    if (!kafka.ok()) {
      (void)server->Shutdown();
      return kafka.status().WithContext("Kafka listener");
    }
    server->kafka_ = std::move(kafka).ValueOrDie();
  }
  if (!options.catalog.listen.empty()) {
    options.catalog.tls = {options.tls_cert_file, options.tls_key_file, options.tls_client_ca_file};
    options.catalog.authenticator = server->authenticator_.get();
    auto catalog = rest::CatalogServer::Start(server->node_.get(), std::move(options.catalog));
    if (!catalog.ok()) {
      (void)server->Shutdown();
      return catalog.status();
    }
    server->catalog_ = std::move(catalog).ValueOrDie();
  }
  if (!options.console.listen.empty()) {
    options.console.tls = {options.tls_cert_file, options.tls_key_file, options.tls_client_ca_file};
    options.console.authenticator = server->authenticator_.get();
    options.console.data_dir = data_dir;
    options.console.kafka = server->kafka_.get();
    auto console = console::ConsoleServer::Start(server->node_.get(), std::move(options.console));
    if (!console.ok()) {
      (void)server->Shutdown();
      return console.status().WithContext("the console");
    }
    server->console_ = std::move(console).ValueOrDie();
  }
  server->ready_ = true;
  return server;
}

Server::~Server() { (void)Shutdown(); }

void Server::Wait() {
  if (grpc_server_) grpc_server_->Wait();
}

Status Server::Shutdown() {
  if (shut_down_) return Status::OK();
  shut_down_ = true;
  ready_ = false;
  // Controlled shutdown: the leadership of this server's buckets moves while it still answers,
  // so clients find the new leaders at once.
  if (node_ && node_->cluster()) {
    if (Status st = node_->cluster()->Leave(); !st.ok()) {
      spdlog::warn("controlled shutdown: {}", st.message());
    }
  }
  if (metrics_server_) metrics_server_->Stop();  // no scrape reads the node past here
  if (console_) console_->Stop();                // nor a page the Kafka groups
  if (kafka_) kafka_->Stop();
  if (catalog_) catalog_->Stop();
  if (schema_registry_) schema_registry_->Stop();
  if (service_) service_->StopStreams();
  if (grpc_server_) {
    grpc_server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  }
  return node_ ? node_->Close() : Status::OK();
}

}  // namespace oxbow::server
