// Node: the transport-neutral layer under every front end (Arrow Flight, Kafka, the Iceberg REST
// catalog). It owns the engine (the tables of a data dir) and the tiering
// service (their Iceberg copies) and keeps the two in step: creating, dropping, describing.
// Front ends translate their protocol to these calls and back; no protocol type enters here.
// docs/architecture.md draws the layers.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "oxbow/catalog/descriptor.h"
#include "oxbow/clientstate/offset_store.h"
#include "oxbow/clientstate/producer_states.h"
#include "oxbow/cluster/cluster.h"
#include "oxbow/engine/engine.h"
#include "oxbow/lake/lake.h"
#include "oxbow/lake/lake_read.h"
#include "oxbow/metrics/metrics.h"
#include "oxbow/node/table_handle.h"
#include "oxbow/storage/s3.h"

namespace oxbow::node {

struct NodeOptions {
  // The data dir, its logs, retention and scrubbing.
  engine::EngineOptions engine;
  // The warehouse and the tiering of every lake-enabled table into it.
  lake::LakeOptions lake;
  // The object store of an "s3://bucket/prefix" warehouse (docs/storage.md); then the lake's
  // files go there and each table's current-metadata pointer stays in <data_dir>/lake-catalog.
  storage::S3Options s3;
  // Where the state kept for clients beyond their rows lives (clientstate: idempotent
  // producers' sequences, consumer groups' committed offsets). Default (empty): none is kept.
  std::string client_state_dir;
  // The tables whose logs may hold idempotent producers' batches (replayed at open).
  std::function<bool(const catalog::TableDescriptor&)> may_hold_producers;
  // The table a Kafka topic names (Invalid when none): in cluster mode a committed offset
  // remembers its topic's table id, so that a dropped topic's commits are forgotten.
  std::function<Result<std::string>(std::string_view topic)> table_for_topic;
  // Cluster mode (docs/cluster.md) when cluster.zookeeper is set; embedded mode otherwise.
  cluster::ClusterOptions cluster;
  // Embedded mode: rebuild the empty data dir from the warehouse before opening it
  // (engine::RecoverDataDir; docs/operations.md#recovering-a-lost-data-dir).
  bool recover_from_warehouse = false;
};

// What describe_table reports.
struct TableDescription {
  engine::TableStatus table;   // descriptor and buckets
  lake::LakeTableStatus lake;  // the table's Iceberg copy (enabled=false when it has none)
};

class Node {
 public:
  // Opens the engine (recovering every log), then starts tiering.
  static Result<std::unique_ptr<Node>> Open(NodeOptions options);
  ~Node();  // Close()s, ignoring errors
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // Refuses up front what the table's lake could not hold, then creates the table.
  Result<catalog::TableDescriptor> CreateTable(const catalog::CreateTableRequest& request);
  // Drops the table and its lake copy.
  Status DropTable(const std::string& name);
  // Applies an alter_table request atomically (docs/api.md#alter_table): the new descriptor is
  // checked as create_table checks one (lake properties included), the table reopens on it and
  // tiering takes up its new lake properties. Column changes of a table in the lake are refused.
  Result<catalog::TableDescriptor> AlterTable(const catalog::AlterTableRequest& request);
  // Grows a log table without a bucket key to `buckets` buckets (Kafka's CreatePartitions): the
  // new buckets start empty at offset 0, the old keep their rows. A table that places rows by
  // key refuses, and so does a count that is not larger (InvalidArgument naming why).
  Result<catalog::TableDescriptor> AddBuckets(const std::string& table, int32_t buckets);
  std::vector<catalog::TableDescriptor> ListTables() const;
  // Table `name` resolved once (NotFound naming it when it does not exist): what front ends
  // work on. Cheap: no lake call.
  Result<TableHandle> GetTable(const std::string& name) const;
  // The table and the state its lake last published.
  Result<TableDescription> DescribeTable(const std::string& name) const;

  // The lake's Iceberg catalog and the file system of its files, for front ends that serve the
  // lake read-only (the Iceberg REST catalog).
  const std::shared_ptr<iceberg::Catalog>& LakeCatalog() const { return tiering_->catalog(); }
  const std::shared_ptr<FileSystem>& LakeFileSystem() const { return tiering_->file_system(); }
  // What a reader of the lake needs besides credentials: for an S3 warehouse, pyiceberg's and
  // Iceberg's FileIO properties s3.endpoint, s3.region, client.region and s3.path-style-access;
  // empty for a local warehouse. Secrets are never part of it.
  const std::map<std::string, std::string>& LakeReaderConfig() const { return lake_reader_config_; }

  // Stops tiering, then flushes and closes every table. Idempotent.
  Status Close();

  // The cluster this server belongs to; null in embedded mode.
  cluster::Cluster* cluster() const { return cluster_.get(); }

  // The client state of NodeOptions::client_state_dir; null without one.
  clientstate::ProducerStates* producers() { return producers_.get(); }
  clientstate::OffsetStore* offsets() { return offsets_.get(); }
  // NodeOptions::client_state_dir: front ends keep more client state below it.
  const std::string& client_state_dir() const { return client_state_dir_; }

  // What front ends count (puts, reads, errors) and the logs time (fsyncs).
  metrics::Metrics& metrics() { return *metrics_; }
  // The Prometheus page: those counters plus offsets, log sizes, lake lag, key-value store
  // memory and process figures read now (docs/metrics.md).
  std::string MetricsPage() const;

 private:
  Node() = default;

  std::unique_ptr<metrics::Metrics> metrics_ = std::make_unique<metrics::Metrics>();
  std::unique_ptr<engine::Engine> engine_;
  std::unique_ptr<lake::TieringService> tiering_;
  std::unique_ptr<cluster::Cluster> cluster_;
  std::unique_ptr<internal::Peers> peers_;  // cluster mode: clients of the other servers
  // The cluster, for the engine's KV snapshot thread and for tiering, which start before the
  // cluster joins (null until then).
  std::atomic<cluster::Cluster*> joined_cluster_{nullptr};
  std::unique_ptr<clientstate::ProducerStates> producers_;
  std::unique_ptr<clientstate::OffsetStore> offsets_;
  std::string client_state_dir_;
  std::map<std::string, std::string> lake_reader_config_;
  bool closed_ = false;
};

}  // namespace oxbow::node
