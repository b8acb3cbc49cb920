#include <signal.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "oxbow/parquet/writer.h"
#include "oxbow/server/server.h"

namespace oxbow::server {
namespace {

// The config file, the data dir and the listeners: Flight, TLS, logins, metrics, Kafka and the
// REST catalog.
void AddListenerFlags(CLI::App& app, ServerOptions* options) {
  app.set_config("--config", "", "Read options from a TOML/INI file (keys = long flag names)");
  app.add_option("--data-dir", options->node.engine.data_dir, "Directory of all state")
      ->capture_default_str();
  app.add_option("--listen", options->listen, "host:port of the Flight endpoint")
      ->capture_default_str();
  app.add_option("--tls-cert", options->tls_cert_file,
                 "PEM certificate chain: serve Flight (grpc+tls://), the REST catalog "
                 "(https://) and Kafka (SSL) over TLS");
  app.add_option("--tls-key", options->tls_key_file, "PEM private key of --tls-cert");
  app.add_option("--tls-client-ca", options->tls_client_ca_file,
                 "PEM CA bundle: require client certificates signed by it (mutual TLS on Flight, "
                 "the REST catalog and Kafka)");
  app.add_flag("--metrics-tls", options->metrics_tls,
               "Serve the metrics listener over HTTPS with --tls-cert and --tls-key");
  app.add_flag("--auth", options->auth,
               "Require a login (Flight handshake, basic auth against the data dir's users.json, "
               "see `oxbow user`; Kafka: SASL PLAIN or SCRAM-SHA-256) and a grant on every "
               "table a call touches");
  app.add_option("--auth-token-lifetime-s", options->token_lifetime_s,
                 "How long a bearer token of the handshake stays valid")
      ->capture_default_str();
  app.add_flag("--allow-unauthenticated", options->allow_unauthenticated,
               "Serve without --auth on an address other than loopback");
  app.add_option("--metrics-listen", options->metrics_listen,
                 "host:port of /metrics (Prometheus), /healthz and /readyz (empty: off)")
      ->capture_default_str();
  app.add_option("--metrics-auth", options->metrics_auth,
                 "on: /metrics needs a login of a user granted '*' (basic auth or a bearer "
                 "token); off: no login; auto: on under --auth beyond loopback")
      ->check(CLI::IsMember({"auto", "on", "off"}))
      ->capture_default_str();
  app.add_option("--kafka-listen", options->kafka.listen,
                 "host:port of the Kafka listener (empty: no Kafka)")
      ->capture_default_str();
  app.add_option("--kafka-advertised-host", options->kafka.advertised_host,
                 "Host Kafka clients are told to connect to (default: the listen host)");
  app.add_option("--kafka-default-partitions", options->kafka.default_partitions,
                 "Partitions of a topic created without a count (auto-created topics)")
      ->capture_default_str();
  app.add_option("--kafka-auto-create-topics", options->kafka.auto_create_topics,
                 "Create a topic a client asks Metadata about when it does not exist")
      ->capture_default_str();
  app.add_option("--kafka-max-request-bytes", options->kafka.max_request_bytes,
                 "A Kafka request larger than this closes its connection")
      ->capture_default_str();
  app.add_option("--catalog-listen", options->catalog.listen,
                 "host:port of the Iceberg REST catalog ('' turns it off)")
      ->capture_default_str();
  app.add_option("--schema-registry-listen", options->schema_registry.listen,
                 "host:port of the schema registry (Confluent's REST API; '' turns it off; "
                 "off by default in cluster mode)")
      ->capture_default_str();
  app.add_option("--console-listen", options->console.listen,
                 "host:port of the web console ('' turns it off; off by default in cluster mode)")
      ->capture_default_str();
  app.add_option("--console-sample-ms", options->console.sample_interval,
                 "How often the console samples the figures of its charts (an hour is kept)")
      ->capture_default_str();
  app.add_option("--catalog-token", options->catalog.token,
                 "Bearer token the REST catalog requires of every request (default: none; "
                 "under --auth the catalog takes the users instead)")
      ->envname("OXBOW_CATALOG_TOKEN");
}

// The data dir's logs and key-value store.
void AddStorageFlags(CLI::App& app, ServerOptions* options) {
  auto& log = options->node.engine.log;
  static const std::map<std::string, log::FlushPolicy> kPolicies = {
      {"fsync", log::FlushPolicy::kEveryAppend}, {"interval", log::FlushPolicy::kInterval}};
  app.add_option("--flush", log.flush_policy,
                 "fsync: acknowledge after fsync, with group commit; interval: fsync every "
                 "--flush-interval-ms (acks may be lost on power failure)")
      ->transform(CLI::CheckedTransformer(kPolicies, CLI::ignore_case))
      ->default_str("fsync");
  app.add_option("--flush-interval-ms", log.flush_interval_ms,
                 "fsync period under --flush interval")
      ->capture_default_str();
  app.add_option("--segment-bytes", log.segment_bytes, "Roll a log segment at this size")
      ->capture_default_str();
  app.add_option("--segment-ms", log.segment_ms, "Roll a log segment at this age (-1: never)")
      ->capture_default_str();
  app.add_option("--retention-bytes", log.retention_bytes,
                 "Keep at most this many bytes per bucket (-1: unlimited)")
      ->capture_default_str();
  app.add_option("--retention-ms", log.retention_ms,
                 "Delete segments older than this (-1: keep forever)")
      ->capture_default_str();
  app.add_option("--scrub-interval-ms", options->node.engine.scrub_interval_ms,
                 "Re-verify every checksum of each sealed log segment and each lake data file "
                 "this often (0: never)")
      ->capture_default_str();
  app.add_option("--scrub-bytes-per-second", options->node.engine.scrub_bytes_per_second,
                 "Read rate limit of each scrubber (log segments, lake data files)")
      ->capture_default_str();
  app.add_option("--kv-block-cache-bytes", options->node.engine.kv_block_cache_bytes,
                 "Block cache shared by every primary-key table (one RocksDB per data dir)")
      ->capture_default_str();
  app.add_option("--kv-write-buffer-bytes", options->node.engine.kv_write_buffer_bytes,
                 "Memtable budget of every primary-key table together (charged to the cache)")
      ->capture_default_str();
  app.add_option("--kv-checkpoint-interval-ms", options->node.engine.kv_checkpoint_interval_ms,
                 "How often the key-value store is checkpointed, letting retention delete the "
                 "changelog it covers (0: only at startup)")
      ->capture_default_str();
  options->node.engine.kv_snapshot_interval_ms = -1;  // the mode's default (node::Node::Open)
  app.add_option("--kv-snapshot-interval-ms", options->node.engine.kv_snapshot_interval_ms,
                 "How often each primary-key bucket's leader uploads its rows to the warehouse "
                 "as a KV snapshot, when they moved (0: never; default: 10 min in cluster "
                 "mode, never in embedded mode)");
}

// Cluster mode (docs/cluster.md): ZooKeeper, this server's id and addresses, replication.
void AddClusterFlags(CLI::App& app, ServerOptions* options) {
  auto& cluster = options->node.cluster;
  app.add_option("--zookeeper", cluster.zookeeper,
                 "host:port[,host:port...][/chroot] of ZooKeeper: run as one server of a cluster "
                 "(default: none, embedded mode)");
  app.add_option("--server-id", cluster.server_id,
                 "This server's id in the cluster, unique and stable (> 0)");
  app.add_option("--advertised-flight", cluster.advertised_flight,
                 "grpc://host:port clients and other servers reach this server's Flight endpoint "
                 "at (default: grpc://<--listen>)");
  app.add_option("--advertised-kafka", cluster.advertised_kafka,
                 "host:port Kafka clients reach this server at (default: the Kafka listener's "
                 "advertised host and port)");
  app.add_option("--rack", cluster.rack, "This server's rack, for rack-aware replica placement");
  app.add_option("--zookeeper-session-timeout-ms", cluster.session_timeout_ms,
                 "A server silent this long is declared dead and its buckets move")
      ->capture_default_str();
  app.add_option("--replica-lag-time-max-ms", cluster.replica_lag_time_max_ms,
                 "A follower behind its leader this long leaves the in-sync replicas")
      ->capture_default_str();
  app.add_option("--replica-fetch-wait-ms", cluster.replica_fetch_wait_ms,
                 "How long a follower's fetch waits for new rows")
      ->capture_default_str();
  app.add_option("--ack-timeout-ms", cluster.ack_timeout_ms,
                 "An acks=all put fails if its in-sync replicas do not have it this soon")
      ->capture_default_str();
  app.add_option("--replication-throttle-bytes", cluster.replication_throttle_bytes,
                 "Bytes per second a leader sends to followers not in sync (a bucket being "
                 "moved, a server catching up); 0: unlimited")
      ->capture_default_str();
  app.add_option("--controlled-shutdown-timeout-ms", cluster.controlled_shutdown_timeout_ms,
                 "On SIGTERM, how long to wait for the leadership of this server's buckets to "
                 "move to other in-sync replicas before stopping")
      ->capture_default_str();
}

// The warehouse, its object store and the lake's tiering and maintenance.
void AddLakeFlags(CLI::App& app, ServerOptions* options) {
  app.add_option("--warehouse", options->node.lake.warehouse,
                 "Where the Iceberg tables go: a directory, file:///dir or s3://bucket/prefix")
      ->capture_default_str();
  app.add_flag("--recover-from-warehouse", options->node.recover_from_warehouse,
               "Embedded mode: rebuild an empty --data-dir from the warehouse's copies (catalog, "
               "cold segments, KV snapshots, lake pointers) before serving "
               "(docs/operations.md#recovering-a-lost-data-dir)");
  app.add_option("--cold-log-cache-bytes", options->node.engine.cold_cache_bytes,
                 "Memory cache in front of the cold log's segments (table property "
                 "log.local.retention moves old segments to the warehouse)")
      ->capture_default_str();
  app.add_option("--cold-log-check-ms", options->node.engine.cold_check_ms,
                 "How often old log segments are moved to the cold log (0: never)")
      ->capture_default_str();
  app.add_option("--s3-endpoint", options->node.s3.endpoint,
                 "S3 endpoint of an s3:// warehouse (default: AWS_ENDPOINT_URL, else AWS itself); "
                 "credentials come only from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY/"
                 "AWS_SESSION_TOKEN or the AWS credentials file");
  app.add_option("--s3-region", options->node.s3.region, "Region S3 requests are signed for")
      ->capture_default_str();
  app.add_option("--s3-path-style", options->node.s3.path_style,
                 "Path-style S3 URLs (true) or virtual-host ones (false); default: true when an "
                 "endpoint is set");
  app.add_option("--lake-freshness-ms", options->node.lake.freshness_ms,
                 "How often tables are tiered (table property lake.freshness overrides)")
      ->capture_default_str();
  app.add_option_function<std::string>(
         "--lake-fresh-codec",
         [options](const std::string& name) {
           options->node.lake.fresh_codec = parquet::ParseCodec(name).ValueOrDie();
         },
         "Codec of the files rounds write (table property lake.fresh-codec overrides); "
         "compaction rewrites them in zstd, so zstd means no fresh files")
      ->check([](const std::string& name) {
        auto codec = parquet::ParseCodec(name);
        return codec.ok() ? std::string() : codec.status().message();
      })
      ->default_str("lz4");
  app.add_option("--lake-target-file-bytes", options->node.lake.target_file_bytes,
                 "Compaction merges small lake files into files of about this size")
      ->capture_default_str();
  app.add_option("--lake-compaction-min-files", options->node.lake.compaction_min_files,
                 "Small files in a partition that trigger compaction")
      ->capture_default_str();
  app.add_option("--lake-max-manifests", options->node.lake.max_manifests,
                 "Manifests in a snapshot before they are merged into one")
      ->capture_default_str();
  app.add_option("--lake-round-nice", options->node.lake.round_nice,
                 "Nice level of the lake's round workers (0: the producers' priority)")
      ->check(CLI::Range(0, 19))
      ->capture_default_str();
  app.add_option("--lake-maintenance-nice", options->node.lake.maintenance_nice,
                 "Nice level of the lake's maintenance thread (compaction, merging, expiry)")
      ->check(CLI::Range(0, 19))
      ->capture_default_str();
  app.add_option("--lake-retain-snapshots", options->node.lake.retain_snapshots,
                 "Newest snapshots always kept")
      ->capture_default_str();
  app.add_option("--lake-snapshot-max-age-ms", options->node.lake.snapshot_max_age_ms,
                 "Older snapshots (beyond the retained ones) expire")
      ->capture_default_str();
  app.add_option("--lake-maintenance-interval-ms", options->node.lake.maintenance_interval_ms,
                 "How often compaction, manifest merging and expiry run per table")
      ->capture_default_str();
}

// Flags and the optional config file (TOML or INI with the same keys as the long flags).
void AddFlags(CLI::App& app, ServerOptions* options, std::string* log_level) {
  AddListenerFlags(app, options);
  AddStorageFlags(app, options);
  AddLakeFlags(app, options);
  AddClusterFlags(app, options);
  app.add_option("--log-level", *log_level, "trace, debug, info, warn, error")
      ->capture_default_str();
}

// The command line with each "--flag=" (an empty value) split into "--flag" and "": CLI11 reads
// "--flag=" as "--flag" and takes the next argument as its value.
std::vector<std::string> WithEmptyValuesSplit(int argc, char** argv) {
  std::vector<std::string> args;
  for (int i = 0; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (i > 0 && arg.starts_with("--") && arg.size() > 3 && arg.back() == '=' &&
        arg.find('=') == arg.size() - 1) {
      args.emplace_back(arg.substr(0, arg.size() - 1));
      args.emplace_back();
    } else {
      args.emplace_back(arg);
    }
  }
  return args;
}

// Blocks SIGINT and SIGTERM in every thread (call before starting any), then waits for one.
sigset_t BlockShutdownSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

}  // namespace

int RunDaemon(int argc, char** argv) {
  CLI::App app{"oxbowd: the Oxbow streaming lakehouse server"};
  ServerOptions options;
  options.node.engine.data_dir = "./data";
  options.node.s3 = storage::S3OptionsFromEnvironment();
  std::string log_level = "info";
  AddFlags(app, &options, &log_level);
  std::vector<std::string> args = WithEmptyValuesSplit(argc, argv);
  std::vector<char*> arg_pointers;
  for (auto& arg : args) arg_pointers.push_back(arg.data());
  try {
    app.parse(static_cast<int>(arg_pointers.size()), arg_pointers.data());
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  // Servers of a cluster often share a host: each serves the (shared) registry when asked to.
  if (!options.node.cluster.zookeeper.empty() && app.count("--schema-registry-listen") == 0) {
    options.schema_registry.listen.clear();
  }
  if (!options.node.cluster.zookeeper.empty() && app.count("--console-listen") == 0) {
    options.console.listen.clear();
  }
  if (app.count("--s3-endpoint") > 0 && app.count("--s3-path-style") == 0) {
    options.node.s3.path_style = true;
  }
  // One pair of scrub flags for both scrubbers.
  options.node.lake.scrub_interval_ms = options.node.engine.scrub_interval_ms;
  options.node.lake.scrub_bytes_per_second = options.node.engine.scrub_bytes_per_second;
  spdlog::set_level(spdlog::level::from_str(log_level));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");

  sigset_t signals = BlockShutdownSignals();
  spdlog::info("opening data dir {}, warehouse {}", options.node.engine.data_dir,
               options.node.lake.warehouse);
  auto server = Server::Start(options);
  if (!server.ok()) {
    spdlog::error("cannot start: {}", server.status().message());
    return 1;
  }
  spdlog::info("serving Arrow Flight{} on {} (port {})",
               options.tls_cert_file.empty()        ? ""
               : options.tls_client_ca_file.empty() ? " over TLS"
                                                    : " over mutual TLS",
               options.listen, (*server)->port());
  if ((*server)->metrics_port() != 0) {
    spdlog::info("serving metrics on {} (port {})", options.metrics_listen,
                 (*server)->metrics_port());
  }
  if ((*server)->kafka_port() != 0) {
    spdlog::info("serving Kafka on {} (port {})", options.kafka.listen, (*server)->kafka_port());
  }
  if ((*server)->catalog_port() != 0) {
    spdlog::info("serving the Iceberg REST catalog on {} (port {})", options.catalog.listen,
                 (*server)->catalog_port());
  }
  if ((*server)->schema_registry_port() != 0) {
    spdlog::info("serving the schema registry on {} (port {})", options.schema_registry.listen,
                 (*server)->schema_registry_port());
  }
  if ((*server)->console_port() != 0) {
    spdlog::info("serving the console on http{}://{} (port {})",
                 options.tls_cert_file.empty() ? "" : "s", options.console.listen,
                 (*server)->console_port());
  }
  int signal_number = 0;
  sigwait(&signals, &signal_number);
  spdlog::info("received {}, shutting down", signal_number == SIGTERM ? "SIGTERM" : "SIGINT");
  Status st = (*server)->Shutdown();
  if (!st.ok()) {
    spdlog::error("shutdown: {}", st.message());
    return 1;
  }
  spdlog::info("stopped cleanly");
  return 0;
}

}  // namespace oxbow::server
