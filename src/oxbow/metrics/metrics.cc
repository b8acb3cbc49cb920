#include "oxbow/metrics/metrics.h"

#include <httplib.h>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>

namespace oxbow::metrics {

namespace {

// Latency buckets in seconds: 100 us to 10 s.
const prometheus::Histogram::BucketBoundaries kLatencyBuckets = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10};

// Tiering rounds and compaction steps: 1 ms to 5 min.
const prometheus::Histogram::BucketBoundaries kLakeBuckets = {
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300};

const char* const kCommitKinds[] = {"append", "seed", "compaction", "rewrite_manifests",
                                    "expire_snapshots"};

}  // namespace

struct Metrics::Impl {
  explicit Impl(int64_t max_bucket_series) : max_bucket_series(max_bucket_series) {}

  // The bucket label of `bucket` of `table`: its number while (table, bucket) pairs are under
  // the cap, "other" beyond, "none" for kNoBucket.
  std::string BucketLabel(const std::string& table, int32_t bucket) {
    if (bucket == kNoBucket) return AdmitLabel(table, "none", false);
    return AdmitLabel(table, std::to_string(bucket), true);
  }

  std::string AdmitLabel(const std::string& table, std::string label, bool counts) {
    std::lock_guard<std::mutex> lock(mu);
    auto& labels = bucket_labels[table];
    if (labels.contains(label)) return label;
    if (counts && bucket_series >= max_bucket_series) {
      labels.insert("other");
      return "other";
    }
    if (counts) ++bucket_series;
    labels.insert(label);
    return label;
  }

  // The bucket labels `table` has series under, forgotten.
  std::set<std::string> TakeBucketLabels(const std::string& table) {
    std::lock_guard<std::mutex> lock(mu);
    auto it = bucket_labels.find(table);
    if (it == bucket_labels.end()) return {};
    std::set<std::string> labels = std::move(it->second);
    bucket_labels.erase(it);
    for (const auto& label : labels) {
      if (label != "none" && label != "other") --bucket_series;
    }
    return labels;
  }

  const int64_t max_bucket_series;
  std::mutex totals_mu;
  Totals totals;  // guarded by totals_mu
  std::mutex mu;
  std::map<std::string, std::set<std::string>> bucket_labels;  // by table; guarded by mu
  int64_t bucket_series = 0;  // numbered bucket labels in bucket_labels; guarded by mu

  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  prometheus::Family<prometheus::Counter>& rows_in =
      prometheus::BuildCounter()
          .Name("oxbow_rows_in_total")
          .Help("Rows appended by acknowledged puts and Kafka produces, by table and bucket")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& bytes_in =
      prometheus::BuildCounter()
          .Name("oxbow_bytes_in_total")
          .Help("Bytes of acknowledged put batches and Kafka record sets, by table and bucket")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& rows_out =
      prometheus::BuildCounter()
          .Name("oxbow_rows_out_total")
          .Help("Rows sent by reads and Kafka fetches, by table and bucket")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& bytes_out =
      prometheus::BuildCounter()
          .Name("oxbow_bytes_out_total")
          .Help("Bytes sent by reads and Kafka fetches, by table and bucket")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& errors =
      prometheus::BuildCounter()
          .Name("oxbow_request_errors_total")
          .Help("Calls that failed, by operation and status code")
          .Register(*registry);
  prometheus::Family<prometheus::Histogram>& put_latency =
      prometheus::BuildHistogram()
          .Name("oxbow_produce_latency_seconds")
          .Help("Time from receiving a put batch to acknowledging it")
          .Register(*registry);
  prometheus::Family<prometheus::Histogram>& fetch_latency =
      prometheus::BuildHistogram()
          .Name("oxbow_fetch_latency_seconds")
          .Help(
              "Time to get one read batch ready to send (a follower's wait for new data excluded)")
          .Register(*registry);
  prometheus::Family<prometheus::Histogram>& fsync_latency =
      prometheus::BuildHistogram()
          .Name("oxbow_fsync_latency_seconds")
          .Help("Duration of each fsync of a log segment")
          .Register(*registry);
  prometheus::Family<prometheus::Gauge>& follow_readers = prometheus::BuildGauge()
                                                              .Name("oxbow_follow_readers")
                                                              .Help("Open following reads")
                                                              .Register(*registry);
  prometheus::Histogram& fsync = fsync_latency.Add({}, kLatencyBuckets);
  prometheus::Family<prometheus::Histogram>& lake_round =
      prometheus::BuildHistogram()
          .Name("oxbow_lake_round_duration_seconds")
          .Help("Tiering rounds that committed a snapshot or failed: read, write, commit")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& lake_round_errors =
      prometheus::BuildCounter()
          .Name("oxbow_lake_round_errors_total")
          .Help("Tiering rounds that failed")
          .Register(*registry);
  prometheus::Family<prometheus::Histogram>& compaction =
      prometheus::BuildHistogram()
          .Name("oxbow_lake_compaction_duration_seconds")
          .Help("Compaction steps (one partition's small files rewritten) that committed or failed")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& compaction_errors =
      prometheus::BuildCounter()
          .Name("oxbow_lake_compaction_errors_total")
          .Help("Compaction steps that failed")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& lake_commits =
      prometheus::BuildCounter()
          .Name("oxbow_lake_commits_total")
          .Help("Commits of new Iceberg metadata, by kind")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& union_pruned =
      prometheus::BuildCounter()
          .Name("oxbow_union_read_pruned_total")
          .Help(
              "Lake data files (unit=file) and row groups (unit=row_group) filtered union reads "
              "skipped by their min/max bounds")
          .Register(*registry);
};

Metrics::Metrics(int64_t max_bucket_series) : impl_(std::make_unique<Impl>(max_bucket_series)) {}
Metrics::~Metrics() = default;

void Metrics::AddPut(const std::string& table, const std::vector<BucketRows>& rows, int64_t bytes,
                     double seconds) {
  int64_t total_rows = 0;
  for (const auto& r : rows) total_rows += r.rows;
  int64_t bytes_left = bytes;
  for (size_t i = 0; i < rows.size(); ++i) {
    // Each bucket's share of the bytes by its rows; the last takes the remainder.
    const int64_t share =
        i + 1 == rows.size() ? bytes_left
        : total_rows > 0
            ? static_cast<int64_t>(static_cast<double>(bytes) * static_cast<double>(rows[i].rows) /
                                   static_cast<double>(total_rows))
            : 0;
    bytes_left -= share;
    const prometheus::Labels labels{{"table", table},
                                    {"bucket", impl_->BucketLabel(table, rows[i].bucket)}};
    impl_->rows_in.Add(labels).Increment(static_cast<double>(rows[i].rows));
    impl_->bytes_in.Add(labels).Increment(static_cast<double>(share));
  }
  impl_->put_latency.Add({{"table", table}}, kLatencyBuckets).Observe(seconds);
  std::lock_guard lock(impl_->totals_mu);
  Totals& t = impl_->totals;
  ++t.puts;
  t.put_rows += total_rows;
  t.put_bytes += bytes;
  t.put_seconds += seconds;
}

void Metrics::AddFetch(const std::string& table, int32_t bucket, int64_t rows, int64_t bytes,
                       double seconds) {
  const prometheus::Labels labels{{"table", table}, {"bucket", impl_->BucketLabel(table, bucket)}};
  impl_->rows_out.Add(labels).Increment(static_cast<double>(rows));
  impl_->bytes_out.Add(labels).Increment(static_cast<double>(bytes));
  impl_->fetch_latency.Add({{"table", table}}, kLatencyBuckets).Observe(seconds);
  std::lock_guard lock(impl_->totals_mu);
  Totals& t = impl_->totals;
  ++t.fetches;
  t.fetch_rows += rows;
  t.fetch_bytes += bytes;
  t.fetch_seconds += seconds;
}

void Metrics::AddFollowReaders(const std::string& table, int delta) {
  impl_->follow_readers.Add({{"table", table}}).Increment(delta);
}

void Metrics::AddError(const std::string& operation, std::string_view code) {
  impl_->errors.Add({{"operation", operation}, {"code", std::string(code)}}).Increment();
  std::lock_guard lock(impl_->totals_mu);
  ++impl_->totals.errors;
}

Totals Metrics::totals() const {
  std::lock_guard lock(impl_->totals_mu);
  return impl_->totals;
}

void Metrics::ObserveFsync(double seconds) { impl_->fsync.Observe(seconds); }

void Metrics::ObserveLakeRound(const std::string& table, double seconds, bool ok) {
  impl_->lake_round.Add({{"table", table}}, kLakeBuckets).Observe(seconds);
  auto& errors = impl_->lake_round_errors.Add({{"table", table}});
  if (!ok) errors.Increment();
}

void Metrics::ObserveCompaction(const std::string& table, double seconds, bool ok) {
  impl_->compaction.Add({{"table", table}}, kLakeBuckets).Observe(seconds);
  auto& errors = impl_->compaction_errors.Add({{"table", table}});
  if (!ok) errors.Increment();
}

void Metrics::AddLakeCommit(const std::string& table, const std::string& kind) {
  impl_->lake_commits.Add({{"table", table}, {"kind", kind}}).Increment();
}

void Metrics::AddUnionPruning(const std::string& table, int64_t files, int64_t row_groups) {
  if (files > 0) {
    impl_->union_pruned.Add({{"table", table}, {"unit", "file"}})
        .Increment(static_cast<double>(files));
  }
  if (row_groups > 0) {
    impl_->union_pruned.Add({{"table", table}, {"unit", "row_group"}})
        .Increment(static_cast<double>(row_groups));
  }
}

void Metrics::ForgetTable(const std::string& table) {
  auto forget = [&](auto& family, const prometheus::Labels& labels) {
    if (family.Has(labels)) family.Remove(&family.Add(labels));
  };
  for (const auto& bucket : impl_->TakeBucketLabels(table)) {
    const prometheus::Labels labels{{"table", table}, {"bucket", bucket}};
    for (auto* family : {&impl_->rows_in, &impl_->bytes_in, &impl_->rows_out, &impl_->bytes_out}) {
      forget(*family, labels);
    }
  }
  const prometheus::Labels labels{{"table", table}};
  forget(impl_->follow_readers, labels);
  forget(impl_->lake_round_errors, labels);
  forget(impl_->compaction_errors, labels);
  for (const char* kind : kCommitKinds) {
    forget(impl_->lake_commits, {{"table", table}, {"kind", kind}});
  }
  for (const char* unit : {"file", "row_group"}) {
    forget(impl_->union_pruned, {{"table", table}, {"unit", unit}});
  }
  for (auto* family : {&impl_->put_latency, &impl_->fetch_latency}) {
    if (family->Has(labels)) family->Remove(&family->Add(labels, kLatencyBuckets));
  }
  for (auto* family : {&impl_->lake_round, &impl_->compaction}) {
    if (family->Has(labels)) family->Remove(&family->Add(labels, kLakeBuckets));
  }
}

std::string Metrics::Render(const std::vector<Sample>& samples) const {
  std::vector<prometheus::MetricFamily> families = impl_->registry->Collect();
  std::map<std::string, size_t> index;
  for (const auto& s : samples) {
    auto [it, added] = index.emplace(s.name, families.size());
    if (added) {
      prometheus::MetricFamily family;
      family.name = s.name;
      family.help = s.help;
      family.type = s.counter ? prometheus::MetricType::Counter : prometheus::MetricType::Gauge;
      families.push_back(std::move(family));
    }
    prometheus::ClientMetric metric;
    for (const auto& [name, value] : s.labels) metric.label.push_back({name, value});
    if (s.counter) {
      metric.counter.value = s.value;
    } else {
      metric.gauge.value = s.value;
    }
    families[it->second].metric.push_back(std::move(metric));
  }
  return prometheus::TextSerializer().Serialize(families);
}

Result<std::unique_ptr<MetricsServer>> MetricsServer::Start(const std::string& listen,
                                                            const http::TlsOptions& tls,
                                                            std::function<std::string()> page,
                                                            std::function<bool()> ready,
                                                            ScrapeAuthorizer authorize) {
  std::unique_ptr<MetricsServer> server(new MetricsServer());
  ASSIGN_OR_RAISE(
      server->listener_, http::Listener::Start("metrics", listen, tls, [&](httplib::Server& http) {
        http.Get("/metrics",
                 [page, authorize](const httplib::Request& request, httplib::Response& response) {
                   if (authorize) {
                     const Status allowed = authorize(request.get_header_value("Authorization"));
                     if (!allowed.ok()) {
                       const bool forbidden = allowed.code() == StatusCode::kPermissionDenied;
                       response.status = forbidden ? 403 : 401;
                       if (!forbidden)
                         response.set_header("WWW-Authenticate", "Basic realm=\"oxbow\"");
                       response.set_content(allowed.message() + "\n", "text/plain");
                       return;
                     }
                   }
                   response.set_content(page(), "text/plain; version=0.0.4; charset=utf-8");
                 });
        http.Get("/healthz", [](const httplib::Request&, httplib::Response& response) {
          response.set_content("ok\n", "text/plain");
        });
        http.Get("/readyz", [ready](const httplib::Request&, httplib::Response& response) {
          const bool is_ready = ready();
          response.status = is_ready ? 200 : 503;
          response.set_content(is_ready ? "ready\n" : "recovering\n", "text/plain");
        });
      }));
  return server;
}

MetricsServer::~MetricsServer() { Stop(); }

int MetricsServer::port() const { return listener_->port(); }

void MetricsServer::Stop() {
  if (listener_) listener_->Stop();
}

int64_t ProcessRssBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      return std::stoll(line.substr(6)) * 1024;  // "VmRSS:   123456 kB"
    }
  }
  return 0;
}

int64_t ProcessOpenFiles() {
  std::error_code ec;
  int64_t count = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++count;
  }
  return count;
}

}  // namespace oxbow::metrics
