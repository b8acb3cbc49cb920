// Load generator for the oxbowd benchmarks (bench/server_bench.py and bench/vs_kafka.py drive
// it), built on oxbow::client so that the client is not the bottleneck. Prints one JSON object
// per line.
//
//   server_bench generate-events --batches N --rows R --arrow data.arrow --records data.rows
//       Writes the events dataset of datagen.h twice: as an uncompressed Arrow IPC file of N
//       batches of R rows, and as one record per row in the encoding of row_encoding.h, each
//       record a u32 little-endian length and the bytes (what the Kafka side sends).
//   server_bench produce --address H:P --table ns.t --input data.arrow [--producers 4]
//                        [--window 4] [--codec none|lz4|zstd] [--server-pid PID]
//       Producer p sends batches p, p+P, p+2P, ... of the (uncompressed IPC) input file on its
//       own connection and DoPut stream, with at most --window batches unacknowledged, and
//       IPC body compression --codec (compressed by the client, stored as sent).
//   server_bench rate --address H:P --table ns.t --input data.arrow --rows-per-second R
//                     [--seconds 10] [--warmup-seconds 2] [--linger-ms 5] [--max-batch-rows 1024]
//                     [--window 5] [--codec lz4]
//       One producer at a fixed rate, batching like Kafka's producer, and a follower tailing the
//       table (which must be new, with one bucket). Row i is due at start + i/R (rows of the
//       input, cycled); a batch is sent once its oldest row has waited --linger-ms or it holds
//       --max-batch-rows rows, with at most --window batches unacknowledged. Per row: ack
//       latency = ack - due time, end-to-end latency = arrival at the follower - due time. Rows
//       due in the first --warmup-seconds are left out of the percentiles.
//   server_bench consume --address H:P --table ns.t [--buckets 4] [--columns a,b] [--reps 1]
//                        [--server-pid PID]
//       Reads buckets 0..N-1 from earliest, one after another, on one connection.
//
// produce and consume report the CPU time (user + system) of this process and, given
// --server-pid, of the server over the measured part (consume: per rep).
//   server_bench upsert --address H:P --table ns.t --rows N --keyspace K [--key-bytes 16]
//                       [--value-bytes 100] [--batch-rows 1024] [--producers 1] [--window 8]
//                       [--warmup-table ns.w]
//       Upserts the rows of bench/pk_data.h (row i: the key of UpsertKeyIndex(i), ValueOf(i))
//       into a primary-key table (k string, v binary) in batches of --batch-rows, through
//       DoPut {"op": "upsert"} streams as produce sends batches; first min(N, 20000) rows into
//       --warmup-table, off the clock.
//   server_bench lookup --address H:P --table ns.t --lookups N --keyspace K [--key-bytes 16]
//                       [--batch 1]
//       Lookup j asks for the key of LookupKeyIndex(j): one DoExchange {"op": "lookup"} stream,
//       --batch keys per message, one message at a time (each round trip timed); the first
//       min(N, 2000) keys are a warm-up.
//   server_bench lookup-echo --lookups N [--keyspace K] [--key-bytes 16] [--batch 1]
//       The same round trips against a Flight server in this process whose DoExchange sends
//       every message back as it came: what a lookup costs without a table (gRPC, the client,
//       loopback), the floor under oxbowd's.
//   server_bench follow --address H:P --table ns.t [--batches 200] [--rows 1000]
//                       [--interval-ms 2]
//       A follower (DoGet follow:true from latest) and a producer sending one batch at a time:
//       the time from each ack to the batch's arrival at the follower.
//
// Bytes are Arrow buffer bytes (the sum of the record batches' buffer sizes).

#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/codegen/method_handler.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "bench_util.h"
#include "datagen.h"
#include "oxbow/arrow/builder.h"
#include "oxbow/arrow/ipc.h"
#include "oxbow/client/client.h"
#include "oxbow/flight/flight_data.h"
#include "pk_data.h"
#include "row_encoding.h"

namespace oxbow::bench {
namespace {

namespace ipc = arrow::ipc;
using arrow::RecordBatchPtr;

int64_t BatchBytes(const arrow::RecordBatch& batch) {
  int64_t bytes = 0;
  for (const auto& column : batch.columns()) {
    for (const auto& buffer : column.data()->buffers) {
      if (buffer) bytes += buffer->size();
    }
  }
  return bytes;
}

// The integer after "key": in a JSON text, or -1.
int64_t JsonInt(const std::string& json, const std::string& key) {
  auto pos = json.find("\"" + key + "\":");
  if (pos == std::string::npos) return -1;
  return std::strtoll(json.c_str() + pos + key.size() + 3, nullptr, 10);
}

std::string TicketJson(const std::string& table, int bucket, const std::string& from,
                       const std::vector<std::string>& columns, bool follow) {
  std::string ticket =
      "{\"table\":\"" + table + "\",\"bucket\":" + std::to_string(bucket) + ",\"from\":" + from;
  if (!columns.empty()) {
    ticket += ",\"columns\":[";
    for (size_t i = 0; i < columns.size(); ++i) {
      ticket += (i ? ",\"" : "\"") + columns[i] + "\"";
    }
    ticket += "]";
  }
  ticket += follow ? ",\"follow\":true}" : "}";
  return ticket;
}

std::vector<std::string> SplitCommas(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) {
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

// ---- generate-events ----

Status GenerateEvents(const Flags& flags) {
  const int64_t num_batches = flags.GetInt("batches", 16);
  const int64_t rows = flags.GetInt("rows", 1024);
  ASSIGN_OR_RAISE(auto arrow_sink,
                  ipc::FileSink::Open(*PosixFileSystem::Default(), flags.Get("arrow", "")));
  ASSIGN_OR_RAISE(auto writer, ipc::FileWriter::Open(arrow_sink, EventsSchema()));
  ASSIGN_OR_RAISE(auto records_sink,
                  ipc::FileSink::Open(*PosixFileSystem::Default(), flags.Get("records", "")));
  int64_t arrow_bytes = 0, raw_bytes = 0;
  std::string records;
  for (int64_t i = 0; i < num_batches; ++i) {
    ASSIGN_OR_RAISE(auto batch, MakeEventsBatch(i, rows));
    RETURN_NOT_OK(writer->WriteRecordBatch(*batch));
    arrow_bytes += BatchBytes(*batch);
    records.clear();
    for (int64_t r = 0; r < rows; ++r) {
      const size_t length_at = records.size();
      records.append(4, '\0');
      AppendEncodedRow(*batch, r, &records);
      const auto length = static_cast<uint32_t>(records.size() - length_at - 4);
      std::memcpy(records.data() + length_at, &length, 4);  // little-endian hosts only
      raw_bytes += length;
    }
    RETURN_NOT_OK(records_sink->Write(records));
  }
  RETURN_NOT_OK(writer->Close());
  RETURN_NOT_OK(records_sink->Close());
  JsonLine()
      .Add("op", "generate-events")
      .Add("batches", num_batches)
      .Add("rows", num_batches * rows)
      .Add("raw_bytes", raw_bytes)
      .Add("arrow_bytes", arrow_bytes)
      .Print();
  return Status::OK();
}

// ---- produce ----

struct ProducerResult {
  Status status;
  int64_t bytes = 0;
  int64_t rows = 0;
  int64_t batches = 0;
  std::vector<double> ack_latencies;  // seconds from Send() to its ack
};

// Opens a producer's DoPut stream on its own connection.
using PutOpener = std::function<Result<std::unique_ptr<client::PutStream>>(client::Client&)>;

void RunProducer(const std::string& address, const PutOpener& open,
                 const std::vector<RecordBatchPtr>& batches, int index, int producers, int window,
                 ProducerResult* result) {
  auto run = [&]() -> Status {
    ASSIGN_OR_RAISE(auto client, client::Client::Connect(address));
    ASSIGN_OR_RAISE(auto stream, open(*client));
    std::mutex mu;
    std::condition_variable cv;
    std::vector<double> sent_at;
    size_t acked = 0;
    Status ack_status;
    std::thread acker([&] {
      while (true) {
        auto ack = stream->ReadAck();
        double now = NowSeconds();
        std::lock_guard<std::mutex> lock(mu);
        if (!ack.ok()) {
          ack_status = ack.status();
        } else if (ack->has_value()) {
          if (acked < sent_at.size()) result->ack_latencies.push_back(now - sent_at[acked]);
          ++acked;
          cv.notify_all();
          continue;
        }
        acked = SIZE_MAX;  // the stream is over
        cv.notify_all();
        return;
      }
    });
    Status send_status;
    for (size_t i = index; i < batches.size(); i += producers) {
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return acked == SIZE_MAX || sent_at.size() - acked < size_t(window); });
        if (acked == SIZE_MAX) break;
        sent_at.push_back(NowSeconds());
      }
      send_status = stream->Send(*batches[i]);
      if (!send_status.ok()) break;
      result->bytes += BatchBytes(*batches[i]);
      result->rows += batches[i]->num_rows();
      ++result->batches;
    }
    Status done = stream->DoneWriting();
    acker.join();
    Status finished = stream->Finish();
    RETURN_NOT_OK(finished);
    RETURN_NOT_OK(send_status);
    RETURN_NOT_OK(ack_status);
    RETURN_NOT_OK(done);
    if (result->ack_latencies.size() != static_cast<size_t>(result->batches)) {
      return Status::Invalid("producer " + std::to_string(index) + " got " +
                             std::to_string(result->ack_latencies.size()) + " acks for " +
                             std::to_string(result->batches) + " batches");
    }
    return Status::OK();
  };
  result->status = run();
}

// Producer p of `producers` sends batches p, p + producers, ... (RunProducer); their totals.
Result<ProducerResult> RunProducers(const std::string& address, const PutOpener& open,
                                    const std::vector<RecordBatchPtr>& batches, int producers,
                                    int window) {
  std::vector<ProducerResult> results(static_cast<size_t>(producers));
  std::vector<std::thread> threads;
  for (int p = 0; p < producers; ++p) {
    threads.emplace_back(RunProducer, address, std::cref(open), std::cref(batches), p, producers,
                         window, &results[static_cast<size_t>(p)]);
  }
  for (auto& t : threads) t.join();
  ProducerResult total;
  for (auto& r : results) {
    RETURN_NOT_OK(r.status);
    total.bytes += r.bytes;
    total.rows += r.rows;
    total.batches += r.batches;
    total.ack_latencies.insert(total.ack_latencies.end(), r.ack_latencies.begin(),
                               r.ack_latencies.end());
  }
  return total;
}

Status Produce(const Flags& flags) {
  const std::string address = flags.Get("address", "");
  const std::string table = flags.Get("table", "");
  const int producers = static_cast<int>(flags.GetInt("producers", 4));
  const int window = static_cast<int>(flags.GetInt("window", 4));
  ipc::WriteOptions options;
  ASSIGN_OR_RAISE(options.codec, arrow::ParseCodec(flags.Get("codec", "none")));
  ASSIGN_OR_RAISE(auto data, ReadFileToMemory(flags.Get("input", "")));
  ASSIGN_OR_RAISE(auto reader, ipc::FileReader::Open(data));
  ASSIGN_OR_RAISE(auto batches, reader->ReadAll());

  const int64_t server_pid = flags.GetInt("server-pid", 0);
  const double server_cpu_start = server_pid ? OtherProcessCpuSeconds(server_pid) : 0;
  const double cpu_start = ProcessCpuSeconds();
  double start = NowSeconds();
  const arrow::SchemaPtr schema = reader->schema();
  ASSIGN_OR_RAISE(ProducerResult total,
                  RunProducers(
                      address, [&](client::Client& c) { return c.DoPut(table, schema, options); },
                      batches, producers, window));
  double seconds = NowSeconds() - start;
  const double client_cpu = ProcessCpuSeconds() - cpu_start;
  const double server_cpu = server_pid ? OtherProcessCpuSeconds(server_pid) - server_cpu_start : 0;
  JsonLine()
      .Add("op", "produce")
      .Add("producers", producers)
      .Add("window", window)
      .Add("codec", std::string(arrow::CodecName(options.codec)))
      .Add("seconds", seconds)
      .Add("client_cpu_seconds", client_cpu)
      .Add("server_cpu_seconds", server_cpu)
      .Add("bytes", total.bytes)
      .Add("rows", total.rows)
      .Add("batches", total.batches)
      .Add("ack_p50_ms", Percentile(&total.ack_latencies, 0.50) * 1e3)
      .Add("ack_p99_ms", Percentile(&total.ack_latencies, 0.99) * 1e3)
      .Add("ack_p999_ms", Percentile(&total.ack_latencies, 0.999) * 1e3)
      .Add("ack_max_ms", Percentile(&total.ack_latencies, 1.0) * 1e3)
      .Print();
  return Status::OK();
}

// ---- consume ----

Status Consume(const Flags& flags) {
  const std::string table = flags.Get("table", "");
  const int buckets = static_cast<int>(flags.GetInt("buckets", 4));
  const int reps = static_cast<int>(flags.GetInt("reps", 1));
  const std::vector<std::string> columns = SplitCommas(flags.Get("columns", ""));
  const int64_t server_pid = flags.GetInt("server-pid", 0);
  ASSIGN_OR_RAISE(auto client, client::Client::Connect(flags.Get("address", "")));
  std::vector<double> times;
  int64_t bytes = 0, rows = 0, batches = 0;
  const double server_cpu_start = server_pid ? OtherProcessCpuSeconds(server_pid) : 0;
  const double cpu_start = ProcessCpuSeconds();
  for (int rep = 0; rep < reps; ++rep) {
    bytes = rows = batches = 0;
    double start = NowSeconds();
    for (int b = 0; b < buckets; ++b) {
      ASSIGN_OR_RAISE(auto stream,
                      client->DoGet(TicketJson(table, b, "\"earliest\"", columns, false)));
      while (true) {
        ASSIGN_OR_RAISE(auto chunk, stream->Next());
        if (!chunk) break;
        bytes += BatchBytes(*chunk->batch);
        rows += chunk->batch->num_rows();
        ++batches;
      }
    }
    times.push_back(NowSeconds() - start);
  }
  const double client_cpu = (ProcessCpuSeconds() - cpu_start) / reps;
  const double server_cpu =
      server_pid ? (OtherProcessCpuSeconds(server_pid) - server_cpu_start) / reps : 0;
  Timing t = Summarize(times);
  JsonLine()
      .Add("op", "consume")
      .Add("columns", static_cast<int64_t>(columns.size()))
      .Add("best", t.best)
      .Add("median", t.median)
      .Add("client_cpu_seconds", client_cpu)
      .Add("server_cpu_seconds", server_cpu)
      .Add("reps", reps)
      .Add("bytes", bytes)
      .Add("rows", rows)
      .Add("batches", batches)
      .Print();
  return Status::OK();
}

// ---- follow: ack-to-tail latency ----

Status Follow(const Flags& flags) {
  const std::string address = flags.Get("address", "");
  const std::string table = flags.Get("table", "");
  const int64_t count = flags.GetInt("batches", 200);
  const int64_t rows = flags.GetInt("rows", 1000);
  const int64_t interval_ms = flags.GetInt("interval-ms", 2);

  std::vector<RecordBatchPtr> batches;
  for (int64_t i = 0; i < count; ++i) {
    ASSIGN_OR_RAISE(auto batch, MakeBenchBatch(i, rows));
    batches.push_back(std::move(batch));
  }
  ASSIGN_OR_RAISE(auto follow_client, client::Client::Connect(address));
  ASSIGN_OR_RAISE(auto produce_client, client::Client::Connect(address));
  ASSIGN_OR_RAISE(auto follower,
                  follow_client->DoGet(TicketJson(table, 0, "\"latest\"", {}, true)));

  std::mutex mu;
  std::condition_variable cv;
  std::map<int64_t, double> arrived;  // base_offset -> time
  Status follow_status;
  std::thread tail([&] {
    while (true) {
      auto chunk = follower->Next();
      double now = NowSeconds();
      std::lock_guard<std::mutex> lock(mu);
      if (!chunk.ok()) follow_status = chunk.status();
      if (!chunk.ok() || !chunk->has_value()) {
        cv.notify_all();
        return;
      }
      arrived[JsonInt((*chunk)->app_metadata, "base_offset")] = now;
      cv.notify_all();
    }
  });

  std::map<int64_t, double> acked;  // base_offset -> time
  Status produce_status = [&]() -> Status {
    ASSIGN_OR_RAISE(auto stream, produce_client->DoPut(table, BenchSchema()));
    for (const auto& batch : batches) {
      RETURN_NOT_OK(stream->Send(*batch));
      ASSIGN_OR_RAISE(auto ack, stream->ReadAck());
      double now = NowSeconds();
      if (!ack) return Status::Invalid("DoPut ended before acknowledging a batch");
      acked[JsonInt(*ack, "base_offset")] = now;
      if (interval_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(interval_ms));
    }
    RETURN_NOT_OK(stream->DoneWriting());
    while (true) {
      ASSIGN_OR_RAISE(auto ack, stream->ReadAck());
      if (!ack) break;
    }
    return stream->Finish();
  }();
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait_for(lock, std::chrono::seconds(10), [&] { return arrived.size() >= acked.size(); });
  }
  follower->Cancel();
  tail.join();
  RETURN_NOT_OK(produce_status);
  RETURN_NOT_OK(follow_status);

  std::vector<double> latencies;
  int64_t before_ack = 0, missing = 0;
  for (const auto& [offset, ack_time] : acked) {
    auto it = arrived.find(offset);
    if (it == arrived.end()) {
      ++missing;
      continue;
    }
    double latency = it->second - ack_time;
    if (latency < 0) ++before_ack;
    latencies.push_back(latency);
  }
  JsonLine()
      .Add("op", "follow")
      .Add("batches", count)
      .Add("rows", rows)
      .Add("matched", static_cast<int64_t>(latencies.size()))
      .Add("missing", missing)
      .Add("arrived_before_ack", before_ack)
      .Add("p50_ms", Percentile(&latencies, 0.50) * 1e3)
      .Add("p99_ms", Percentile(&latencies, 0.99) * 1e3)
      .Add("max_ms", Percentile(&latencies, 1.0) * 1e3)
      .Print();
  if (missing > 0) {
    return Status::Invalid(std::to_string(missing) +
                           " acknowledged batches never reached the follower");
  }
  return Status::OK();
}

// ---- rate: fixed-rate produce, ack and end-to-end latency ----

// The input's rows in order, cycled: row i is row i % total_rows() of the input.
class CycledRows {
 public:
  explicit CycledRows(std::vector<RecordBatchPtr> batches) : batches_(std::move(batches)) {
    for (const auto& batch : batches_) {
      starts_.push_back(total_rows_);
      total_rows_ += batch->num_rows();
    }
  }
  int64_t total_rows() const { return total_rows_; }

  // Zero-copy slices holding rows [first, first + count), cut where the input's batches end.
  std::vector<RecordBatchPtr> Slices(int64_t first, int64_t count) const {
    std::vector<RecordBatchPtr> slices;
    while (count > 0) {
      const int64_t row = first % total_rows_;
      const size_t b = std::upper_bound(starts_.begin(), starts_.end(), row) - starts_.begin() - 1;
      const int64_t offset = row - starts_[b];
      const int64_t length = std::min(count, batches_[b]->num_rows() - offset);
      slices.push_back(batches_[b]->Slice(offset, length));
      first += length;
      count -= length;
    }
    return slices;
  }

 private:
  std::vector<RecordBatchPtr> batches_;
  std::vector<int64_t> starts_;
  int64_t total_rows_ = 0;
};

void SleepUntil(double when) {
  const double wait = when - NowSeconds();
  if (wait > 0) std::this_thread::sleep_for(std::chrono::duration<double>(wait));
}

Status Rate(const Flags& flags) {
  const std::string address = flags.Get("address", "");
  const std::string table = flags.Get("table", "");
  const double rows_per_second = static_cast<double>(flags.GetInt("rows-per-second", 10000));
  const double seconds = std::stod(flags.Get("seconds", "10"));
  const double warmup_seconds = std::stod(flags.Get("warmup-seconds", "2"));
  const double linger = static_cast<double>(flags.GetInt("linger-ms", 5)) / 1e3;
  const int64_t max_batch_rows = flags.GetInt("max-batch-rows", 1024);
  const size_t window = static_cast<size_t>(flags.GetInt("window", 5));
  ipc::WriteOptions options;
  ASSIGN_OR_RAISE(options.codec, arrow::ParseCodec(flags.Get("codec", "lz4")));
  ASSIGN_OR_RAISE(auto data, ReadFileToMemory(flags.Get("input", "")));
  ASSIGN_OR_RAISE(auto reader, ipc::FileReader::Open(data));
  ASSIGN_OR_RAISE(auto batches, reader->ReadAll());
  const CycledRows rows(std::move(batches));
  const auto total = static_cast<int64_t>((warmup_seconds + seconds) * rows_per_second);
  const auto warmup_rows = static_cast<int64_t>(warmup_seconds * rows_per_second);

  ASSIGN_OR_RAISE(auto follow_client, client::Client::Connect(address));
  ASSIGN_OR_RAISE(auto produce_client, client::Client::Connect(address));
  // The table is new, so its offsets are the rows' indexes in this run.
  ASSIGN_OR_RAISE(auto follower,
                  follow_client->DoGet(TicketJson(table, 0, "\"earliest\"", {}, true)));
  ASSIGN_OR_RAISE(auto stream, produce_client->DoPut(table, reader->schema(), options));
  const double start = NowSeconds() + 0.01;
  auto due = [&](int64_t row) { return start + static_cast<double>(row) / rows_per_second; };

  std::mutex mu;
  std::condition_variable cv;
  std::vector<double> ack_latencies, e2e_latencies;
  ack_latencies.reserve(total - warmup_rows);
  e2e_latencies.reserve(total - warmup_rows);
  int64_t received = 0;
  double last_ack = start;
  Status follow_status, ack_status;
  std::thread tail([&] {
    while (true) {
      auto chunk = follower->Next();
      const double now = NowSeconds();
      std::lock_guard<std::mutex> lock(mu);
      if (!chunk.ok()) follow_status = chunk.status();
      if (!chunk.ok() || !chunk->has_value()) break;
      const int64_t next = JsonInt((*chunk)->app_metadata, "next_offset");
      for (int64_t row = std::max(received, warmup_rows); row < next; ++row) {
        e2e_latencies.push_back(now - due(row));
      }
      received = next;
      cv.notify_all();
    }
    cv.notify_all();
  });

  std::deque<std::pair<int64_t, int64_t>> in_flight;  // first row and rows of each Send
  bool acks_over = false;
  std::thread acker([&] {
    while (true) {
      auto ack = stream->ReadAck();
      const double now = NowSeconds();
      std::lock_guard<std::mutex> lock(mu);
      if (!ack.ok()) ack_status = ack.status();
      if (!ack.ok() || !ack->has_value() || in_flight.empty()) break;
      auto [first, count] = in_flight.front();
      in_flight.pop_front();
      for (int64_t row = std::max(first, warmup_rows); row < first + count; ++row) {
        ack_latencies.push_back(now - due(row));
      }
      last_ack = now;
      cv.notify_all();
    }
    acks_over = true;
    cv.notify_all();
  });

  int64_t sends = 0;
  Status send_status = [&]() -> Status {
    int64_t sent = 0;
    while (sent < total) {
      // Like Kafka's producer: go once the oldest waiting row has lingered or a batch is full.
      const int64_t last_of_full_batch = std::min(sent + max_batch_rows, total) - 1;
      SleepUntil(std::min(due(sent) + linger, due(last_of_full_batch)));
      const auto now_due = static_cast<int64_t>((NowSeconds() - start) * rows_per_second) + 1;
      const int64_t ready = std::min({total, now_due, sent + max_batch_rows});
      if (ready <= sent) continue;
      for (const auto& slice : rows.Slices(sent, ready - sent)) {
        {
          std::unique_lock<std::mutex> lock(mu);
          cv.wait(lock, [&] { return acks_over || in_flight.size() < window; });
          if (acks_over) return Status::Invalid("DoPut ended before the last batch was sent");
          in_flight.emplace_back(sent, slice->num_rows());
        }
        RETURN_NOT_OK(stream->Send(*slice));
        sent += slice->num_rows();
        ++sends;
      }
    }
    return Status::OK();
  }();
  Status done = stream->DoneWriting();
  acker.join();
  Status finished = stream->Finish();
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait_for(lock, std::chrono::seconds(30), [&] { return received >= total; });
  }
  follower->Cancel();
  tail.join();
  RETURN_NOT_OK(send_status);
  RETURN_NOT_OK(ack_status);
  RETURN_NOT_OK(done);
  RETURN_NOT_OK(finished);
  RETURN_NOT_OK(follow_status);
  if (received < total) {
    return Status::Invalid("the follower saw " + std::to_string(received) + " of " +
                           std::to_string(total) + " rows within 30 s of the last ack");
  }
  JsonLine()
      .Add("op", "rate")
      .Add("rows_per_second", rows_per_second)
      .Add("codec", std::string(arrow::CodecName(options.codec)))
      .Add("rows", total)
      .Add("measured_rows", total - warmup_rows)
      .Add("sends", sends)
      .Add("achieved_rows_per_second", static_cast<double>(total) / (last_ack - start))
      .Add("ack_p50_ms", Percentile(&ack_latencies, 0.50) * 1e3)
      .Add("ack_p99_ms", Percentile(&ack_latencies, 0.99) * 1e3)
      .Add("ack_p999_ms", Percentile(&ack_latencies, 0.999) * 1e3)
      .Add("ack_max_ms", Percentile(&ack_latencies, 1.0) * 1e3)
      .Add("e2e_p50_ms", Percentile(&e2e_latencies, 0.50) * 1e3)
      .Add("e2e_p99_ms", Percentile(&e2e_latencies, 0.99) * 1e3)
      .Add("e2e_p999_ms", Percentile(&e2e_latencies, 0.999) * 1e3)
      .Add("e2e_max_ms", Percentile(&e2e_latencies, 1.0) * 1e3)
      .Print();
  return Status::OK();
}

// ---- primary keys: upsert and lookup ----

arrow::SchemaPtr KeyValueSchema() {
  static const arrow::SchemaPtr schema =
      std::make_shared<const arrow::Schema>(std::vector<arrow::Field>{
          {"k", arrow::DataType::String(), false}, {"v", arrow::DataType::Binary()}});
  return schema;
}

arrow::SchemaPtr KeySchema() {
  static const arrow::SchemaPtr schema = std::make_shared<const arrow::Schema>(
      std::vector<arrow::Field>{{"k", arrow::DataType::String(), false}});
  return schema;
}

// Batches of `batch_rows` upserts of rows [0, rows) (bench/pk_data.h).
Result<std::vector<RecordBatchPtr>> UpsertBatches(int64_t rows, int64_t batch_rows,
                                                  uint64_t keyspace, int64_t key_bytes,
                                                  int64_t value_bytes) {
  std::vector<RecordBatchPtr> batches;
  for (int64_t first = 0; first < rows; first += batch_rows) {
    const int64_t end = std::min(rows, first + batch_rows);
    arrow::BinaryBuilder keys(arrow::DataType::String());
    arrow::BinaryBuilder values(arrow::DataType::Binary());
    for (int64_t i = first; i < end; ++i) {
      RETURN_NOT_OK(
          keys.Append(KeyOf(UpsertKeyIndex(static_cast<uint64_t>(i), keyspace), key_bytes)));
      RETURN_NOT_OK(values.Append(ValueOf(static_cast<uint64_t>(i), value_bytes)));
    }
    ASSIGN_OR_RAISE(auto k, keys.Finish());
    ASSIGN_OR_RAISE(auto v, values.Finish());
    ASSIGN_OR_RAISE(auto batch, arrow::RecordBatch::Make(KeyValueSchema(), end - first,
                                                         {std::move(k), std::move(v)}));
    batches.push_back(std::move(batch));
  }
  return batches;
}

Status Upsert(const Flags& flags) {
  const std::string address = flags.Get("address", "");
  const int64_t rows = flags.GetInt("rows", 0);
  const int64_t keyspace = flags.GetInt("keyspace", 0);
  if (rows <= 0 || keyspace <= 0) return Status::Invalid("--rows and --keyspace must be > 0");
  const int producers = static_cast<int>(flags.GetInt("producers", 1));
  const int window = static_cast<int>(flags.GetInt("window", 8));
  const int64_t batch_rows = flags.GetInt("batch-rows", 1024);
  const int64_t key_bytes = flags.GetInt("key-bytes", 16);
  const int64_t value_bytes = flags.GetInt("value-bytes", 100);
  ASSIGN_OR_RAISE(auto batches, UpsertBatches(rows, batch_rows, static_cast<uint64_t>(keyspace),
                                              key_bytes, value_bytes));
  auto opener = [](const std::string& table) -> PutOpener {
    flight::Command command;
    command.table = table;
    command.op = flight::Command::Op::kUpsert;
    return [command](client::Client& c) { return c.DoPut(command, KeyValueSchema()); };
  };
  if (flags.Has("warmup-table")) {
    std::vector<RecordBatchPtr> warmup(
        batches.begin(),
        batches.begin() + std::min<int64_t>(static_cast<int64_t>(batches.size()),
                                            (20'000 + batch_rows - 1) / batch_rows));
    RETURN_NOT_OK(
        RunProducers(address, opener(flags.Get("warmup-table", "")), warmup, producers, window)
            .status());
  }
  const double start = NowSeconds();
  ASSIGN_OR_RAISE(ProducerResult total, RunProducers(address, opener(flags.Get("table", "")),
                                                     batches, producers, window));
  const double seconds = NowSeconds() - start;
  JsonLine()
      .Add("op", "upsert")
      .Add("producers", producers)
      .Add("window", window)
      .Add("rows", total.rows)
      .Add("seconds", seconds)
      .Add("rows_per_second", static_cast<double>(total.rows) / seconds)
      .Add("ack_p50_ms", Percentile(&total.ack_latencies, 0.50) * 1e3)
      .Add("ack_p99_ms", Percentile(&total.ack_latencies, 0.99) * 1e3)
      .Print();
  return Status::OK();
}

// A Flight service whose DoExchange sends every message back as it came (for lookup-echo).
class EchoExchange : public grpc::Service {
 public:
  EchoExchange() {
    AddMethod(new grpc::internal::RpcServiceMethod(
        flight::method::kDoExchange, grpc::internal::RpcMethod::BIDI_STREAMING,
        new grpc::internal::BidiStreamingHandler<EchoExchange, flight::FlightDataIn,
                                                 flight::FlightPayload>(
            [](EchoExchange*, grpc::ServerContext*, auto* stream) {
              flight::FlightDataIn in;
              while (stream->Read(&in)) {
                if (!in.data_header) continue;  // the descriptor alone
                flight::FlightPayload out;
                out.data_header = in.data_header;
                if (in.data_body) {
                  out.body_length = in.data_body->size();
                  out.data_body.push_back(in.data_body);
                }
                if (!stream->Write(out)) break;
              }
              return grpc::Status::OK;
            },
            this)));
  }
};

Status Lookup(const Flags& flags) {
  const int64_t lookups = flags.GetInt("lookups", 0);
  const int64_t keyspace = flags.GetInt("keyspace", 0);
  if (lookups <= 0 || keyspace <= 0) return Status::Invalid("--lookups and --keyspace must be > 0");
  const int64_t batch = std::max<int64_t>(1, flags.GetInt("batch", 1));
  const int64_t key_bytes = flags.GetInt("key-bytes", 16);
  ASSIGN_OR_RAISE(auto client, client::Client::Connect(flags.Get("address", "")));
  flight::Command command;
  command.table = flags.Get("table", "");
  command.op = flight::Command::Op::kLookup;
  ASSIGN_OR_RAISE(auto stream, client->DoExchange(command, KeySchema()));
  // Looks up keys [first, end) in one message; the rows found.
  auto ask = [&](int64_t first, int64_t end) -> Result<int64_t> {
    arrow::BinaryBuilder keys(arrow::DataType::String());
    for (int64_t j = first; j < end; ++j) {
      RETURN_NOT_OK(keys.Append(KeyOf(
          LookupKeyIndex(static_cast<uint64_t>(j), static_cast<uint64_t>(keyspace)), key_bytes)));
    }
    ASSIGN_OR_RAISE(auto k, keys.Finish());
    ASSIGN_OR_RAISE(auto message, arrow::RecordBatch::Make(KeySchema(), end - first, {k}));
    RETURN_NOT_OK(stream->Send(*message));
    ASSIGN_OR_RAISE(auto answer, stream->Next());
    if (!answer) return Status::IOError("the lookup stream ended early");
    return answer->batch->num_rows();
  };
  for (int64_t first = 0; first < std::min<int64_t>(lookups, 2000); first += batch) {
    RETURN_NOT_OK(ask(first, std::min(lookups, first + batch)).status());
  }
  std::vector<double> latencies;
  int64_t found = 0;
  const double start = NowSeconds();
  for (int64_t first = 0; first < lookups; first += batch) {
    const double asked = NowSeconds();
    ASSIGN_OR_RAISE(int64_t rows, ask(first, std::min(lookups, first + batch)));
    latencies.push_back(NowSeconds() - asked);
    found += rows;
  }
  const double seconds = NowSeconds() - start;
  RETURN_NOT_OK(stream->DoneWriting());
  while (true) {
    ASSIGN_OR_RAISE(auto rest, stream->Next());
    if (!rest) break;
  }
  RETURN_NOT_OK(stream->Finish());
  JsonLine()
      .Add("op", "lookup")
      .Add("lookups", lookups)
      .Add("batch", batch)
      .Add("found", found)
      .Add("seconds", seconds)
      .Add("keys_per_second", static_cast<double>(lookups) / seconds)
      .Add("p50_us", Percentile(&latencies, 0.50) * 1e6)
      .Add("p99_us", Percentile(&latencies, 0.99) * 1e6)
      .Print();
  return Status::OK();
}

Status Run(int argc, char** argv) {
  if (argc < 2) {
    return Status::Invalid(
        "usage: server_bench generate-events|produce|consume|follow|rate|upsert|lookup|lookup-echo "
        "--flags...");
  }
  const std::string command = argv[1];
  ASSIGN_OR_RAISE(Flags flags, Flags::Parse(argc, argv, 2));
  if (command == "generate-events") return GenerateEvents(flags);
  if (command == "lookup-echo") {
    EchoExchange echo;
    int port = 0;
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&echo);
    std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
    if (!server || port == 0) return Status::IOError("cannot start the echo server");
    Flags echo_flags = flags;
    echo_flags.Set("address", "127.0.0.1:" + std::to_string(port));
    echo_flags.Set("table", "echo.echo");
    if (!flags.Has("keyspace")) echo_flags.Set("keyspace", "1000");
    Status measured = Lookup(echo_flags);
    server->Shutdown();
    return measured;
  }
  if (flags.Get("address", "").empty() || flags.Get("table", "").empty()) {
    return Status::Invalid("--address host:port and --table ns.t are required");
  }
  if (command == "produce") return Produce(flags);
  if (command == "consume") return Consume(flags);
  if (command == "follow") return Follow(flags);
  if (command == "rate") return Rate(flags);
  if (command == "upsert") return Upsert(flags);
  if (command == "lookup") return Lookup(flags);
  return Status::Invalid("unknown command '" + command + "'");
}

}  // namespace
}  // namespace oxbow::bench

int main(int argc, char** argv) {
  oxbow::Status status = oxbow::bench::Run(argc, argv);
  if (!status.ok()) return oxbow::bench::Fail("server_bench", status);
  return 0;
}
