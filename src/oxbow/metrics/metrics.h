// Metrics of oxbowd (docs/metrics.md): the counters and histograms the front ends and the logs
// report into, the values read at scrape time, and the Prometheus text page of both, served
// with /healthz and /readyz by MetricsServer. prometheus-cpp and the HTTP library stay inside.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "oxbow/common/status.h"
#include "oxbow/http/http.h"

namespace oxbow::metrics {

// A value read at scrape time (offsets, log sizes, lake lag, memory).
struct Sample {
  std::string name;  // e.g. "oxbow_log_size_bytes"
  std::string help;
  bool counter = false;  // a counter (only rises), else a gauge
  std::vector<std::pair<std::string, std::string>> labels;
  double value = 0;
};

// The rows a put appended to one bucket.
struct BucketRows {
  int32_t bucket = 0;
  int64_t rows = 0;
};

// The `bucket` of a read that is not of one bucket's log: lookups, snapshots of every bucket,
// the lake part of a union read. Labelled bucket="none".
inline constexpr int32_t kNoBucket = -1;

// What every table's puts, reads and errors add up to since the start (the console's charts
// take rates from them).
struct Totals {
  int64_t puts = 0;  // acknowledged put batches
  int64_t put_rows = 0;
  int64_t put_bytes = 0;
  double put_seconds = 0;  // their receipt-to-ack times, summed
  int64_t fetches = 0;     // batches sent by reads
  int64_t fetch_rows = 0;
  int64_t fetch_bytes = 0;
  double fetch_seconds = 0;
  int64_t errors = 0;
};

// How many (table, bucket) pairs get series of their own in the rows and bytes counters, all
// tables together (docs/metrics.md); the buckets beyond are counted under bucket="other".
inline constexpr int64_t kMaxBucketSeries = 4096;

class Metrics {
 public:
  explicit Metrics(int64_t max_bucket_series = kMaxBucketSeries);
  ~Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // One acknowledged put batch of `table`: its rows in each bucket, its bytes (shared among the
  // buckets in proportion to their rows) and its receipt-to-ack time.
  void AddPut(const std::string& table, const std::vector<BucketRows>& rows, int64_t bytes,
              double seconds);
  // One batch a read of `bucket` (or kNoBucket) sent, and how long getting it ready took.
  void AddFetch(const std::string& table, int32_t bucket, int64_t rows, int64_t bytes,
                double seconds);
  // A following reader of `table` started (+1) or ended (-1).
  void AddFollowReaders(const std::string& table, int delta);
  // A failed call of a front end: `operation` is "put", "fetch", "lookup", "action", or a failed
  // login: "handshake" (Flight), "sasl" (Kafka), "rest_login"; `code` the status code's name
  // (labels stay bounded: no table, which may not even exist).
  void AddError(const std::string& operation, std::string_view code);
  // One fsync of a log segment.
  void ObserveFsync(double seconds);
  // A tiering round of `table` that committed (ok) or failed, and its time.
  void ObserveLakeRound(const std::string& table, double seconds, bool ok);
  // A compaction step of `table` that committed (ok) or failed, and its time.
  void ObserveCompaction(const std::string& table, double seconds, bool ok);
  // A commit to `table`'s Iceberg copy; `kind` is one of the four of lake::LakeObserver.
  void AddLakeCommit(const std::string& table, const std::string& kind);
  // A filtered union read of `table` skipped these lake data files and row groups.
  void AddUnionPruning(const std::string& table, int64_t files, int64_t row_groups);
  // Drops every series labelled with `table` (a dropped table).
  void ForgetTable(const std::string& table);

  Totals totals() const;

  // The Prometheus text exposition of every series plus `samples`.
  std::string Render(const std::vector<Sample>& samples) const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// Decides whether a scrape of /metrics may see the page, from its Authorization header (empty
// when it sent none): OK, or Unauthenticated (a 401 asking for credentials), PermissionDenied
// (403) or ResourceExhausted (a 401 too: a locked-out name), whose message the answer carries.
using ScrapeAuthorizer = std::function<Status(std::string_view authorization)>;

// What the metrics listener serves: GET /metrics (Prometheus text), /healthz (200 while the
// process runs) and /readyz (200 once `ready` says so, else 503).
class MetricsServer {
 public:
  // Binds `listen` ("host:port"; port 0 picks one), over HTTPS when `tls` names files, and
  // serves on a thread of its own. With `authorize`, /metrics answers only the scrapes it
  // allows; /healthz and /readyz stay open to probes.
  static Result<std::unique_ptr<MetricsServer>> Start(const std::string& listen,
                                                      const http::TlsOptions& tls,
                                                      std::function<std::string()> page,
                                                      std::function<bool()> ready,
                                                      ScrapeAuthorizer authorize = {});
  ~MetricsServer();
  int port() const;
  void Stop();

 private:
  MetricsServer() = default;
  std::unique_ptr<http::Listener> listener_;
};

// The process's resident set size and open file descriptors, from /proc/self.
int64_t ProcessRssBytes();
int64_t ProcessOpenFiles();

}  // namespace oxbow::metrics
