// The Oxbow side of the Parquet benchmark (bench/parquet_bench.py runs pyarrow.parquet on the
// same data in the same run).
//
//   parquet_bench generate --out data.arrow --batches N --rows R   (the dataset of datagen.h)
//   parquet_bench --input data.arrow --codec zstd|snappy [--reps 3] [--row-group-rows N]
//                 [--page-checksums on|off] [--write-out F] [--read F1,F2,...]
//   parquet_bench read --read F1,F2,... [--reps 3] [--page-checksums on|off]
//                 (reads only: for profilers, perf stat and callgrind, beside a pyarrow script)
//
// --input is an uncompressed Arrow IPC file, read into memory first. The write is timed into
// memory (a StringSink, as pyarrow writes into a BufferOutputStream), single-threaded, --reps
// times; the last file written is saved to --write-out outside the clock. Each --read file is
// read into memory, then FileReader::Open + Read (all columns) is timed --reps times.
// --page-checksums (default on, as in Oxbow) writes page CRCs and verifies them on reads. One
// JSON object per line.

#include <cstdio>
#include <ctime>
#include <functional>
#include <limits>
#include <sstream>

#include "bench_util.h"
#include "datagen.h"
#include "oxbow/arrow/ipc.h"
#include "oxbow/parquet/reader.h"
#include "oxbow/parquet/writer.h"

namespace oxbow::bench {
namespace {

namespace ipc = arrow::ipc;

// The Parquet writer's output stream over an in-memory StringSink.
class SinkOutput : public parquet::OutputStream {
 public:
  explicit SinkOutput(std::shared_ptr<ipc::StringSink> sink) : sink_(std::move(sink)) {}
  Status Write(const void* data, int64_t size) override {
    return sink_->Write({static_cast<const char*>(data), static_cast<size_t>(size)});
  }
  Status Close() override { return Status::OK(); }

 private:
  std::shared_ptr<ipc::StringSink> sink_;
};

// CPU seconds this process has used (all threads): unlike wall time, what a loaded machine's
// waits for a core do not count.
double ProcessCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct Timings {
  Timing wall;
  Timing cpu;
};

// Runs `body` `reps` times and times each run (wall and CPU); `body` may return work to free
// outside the clock.
Result<Timings> Repeat(int reps, const std::function<Result<std::shared_ptr<void>>()>& body) {
  std::vector<double> wall, cpu;
  for (int i = 0; i < reps; ++i) {
    const double start = NowSeconds();
    const double cpu_start = ProcessCpuSeconds();
    ASSIGN_OR_RAISE(auto keep, body());
    cpu.push_back(ProcessCpuSeconds() - cpu_start);
    wall.push_back(NowSeconds() - start);
    keep.reset();
  }
  return Timings{Summarize(std::move(wall)), Summarize(std::move(cpu))};
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

Status SaveFile(const std::string& path, std::string_view bytes) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return Status::IOError("cannot create '" + path + "'");
  size_t written = std::fwrite(bytes.data(), 1, bytes.size(), f);
  if (std::fclose(f) != 0 || written != bytes.size()) {
    return Status::IOError("cannot write '" + path + "'");
  }
  return Status::OK();
}

Status BenchWrite(const arrow::SchemaPtr& schema, const std::vector<arrow::RecordBatchPtr>& batches,
                  const parquet::WriterOptions& options, const std::string& codec_name, int reps,
                  const std::string& write_out) {
  std::shared_ptr<ipc::StringSink> last;
  int64_t row_groups = 0;
  ASSIGN_OR_RAISE(Timings t, Repeat(reps, [&]() -> Result<std::shared_ptr<void>> {
                    auto sink = std::make_shared<ipc::StringSink>();
                    ASSIGN_OR_RAISE(auto writer,
                                    parquet::FileWriter::Open(
                                        schema, std::make_unique<SinkOutput>(sink), options));
                    for (const auto& batch : batches) RETURN_NOT_OK(writer->Write(*batch));
                    ASSIGN_OR_RAISE(auto metrics, writer->Close());
                    row_groups = static_cast<int64_t>(metrics.row_group_offsets.size());
                    last = sink;
                    return std::shared_ptr<void>(sink);
                  }));
  if (!write_out.empty()) RETURN_NOT_OK(SaveFile(write_out, last->data()));
  JsonLine()
      .Add("op", "write")
      .Add("codec", codec_name)
      .Add("best", t.wall.best)
      .Add("median", t.wall.median)
      .Add("cpu_best", t.cpu.best)
      .Add("bytes", last->size())
      .Add("row_groups", row_groups)
      .Print();
  return Status::OK();
}

Status BenchRead(const std::string& path, const std::string& codec_name,
                 const parquet::OpenOptions& options, int reps) {
  ASSIGN_OR_RAISE(auto file, ReadFileToMemory(path));
  int64_t rows = 0;
  ASSIGN_OR_RAISE(Timings t, Repeat(reps, [&]() -> Result<std::shared_ptr<void>> {
                    ASSIGN_OR_RAISE(auto reader, parquet::FileReader::Open(file, options));
                    ASSIGN_OR_RAISE(auto batches, reader->Read());
                    rows = 0;
                    for (const auto& b : batches) rows += b->num_rows();
                    return std::shared_ptr<void>(
                        std::make_shared<std::vector<arrow::RecordBatchPtr>>(std::move(batches)));
                  }));
  JsonLine()
      .Add("op", "read")
      .Add("codec", codec_name)
      .Add("path", path)
      .Add("best", t.wall.best)
      .Add("median", t.wall.median)
      .Add("cpu_best", t.cpu.best)
      .Add("rows", rows)
      .Add("bytes", file->size())
      .Print();
  return Status::OK();
}

Status Run(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "generate") {
    ASSIGN_OR_RAISE(Flags flags, Flags::Parse(argc, argv, 2));
    const std::string out = flags.Get("out", "");
    if (out.empty()) return Status::Invalid("generate needs --out <file>");
    return WriteBenchFile(out, flags.GetInt("batches", 16), flags.GetInt("rows", 65536));
  }
  const bool read_only = argc > 1 && std::string(argv[1]) == "read";
  ASSIGN_OR_RAISE(Flags flags, Flags::Parse(argc, argv, read_only ? 2 : 1));
  const int reps = static_cast<int>(flags.GetInt("reps", 3));
  const std::string checksums = flags.Get("page-checksums", "on");
  if (checksums != "on" && checksums != "off") {
    return Status::Invalid("--page-checksums must be on or off");
  }
  parquet::OpenOptions open_options;
  open_options.verify_page_checksums = checksums == "on";
  if (read_only) {
    for (const std::string& path : SplitCommas(flags.Get("read", ""))) {
      RETURN_NOT_OK(BenchRead(path, "", open_options, reps));
    }
    return Status::OK();
  }
  const std::string input = flags.Get("input", "");
  if (input.empty()) return Status::Invalid("--input <uncompressed Arrow IPC file> is required");
  const std::string codec_name = flags.Get("codec", "zstd");
  parquet::WriterOptions options;
  ASSIGN_OR_RAISE(options.compression, parquet::ParseCodec(codec_name));
  options.dictionary = true;
  options.row_group_rows = flags.GetInt("row-group-rows", options.row_group_rows);
  // Row groups close by row count only, as pyarrow's do.
  options.row_group_bytes = std::numeric_limits<int64_t>::max();
  options.page_checksums = open_options.verify_page_checksums;

  ASSIGN_OR_RAISE(auto data, ReadFileToMemory(input));
  ASSIGN_OR_RAISE(auto reader, ipc::FileReader::Open(data));
  ASSIGN_OR_RAISE(auto batches, reader->ReadAll());
  RETURN_NOT_OK(
      BenchWrite(reader->schema(), batches, options, codec_name, reps, flags.Get("write-out", "")));
  for (const std::string& path : SplitCommas(flags.Get("read", ""))) {
    RETURN_NOT_OK(BenchRead(path, codec_name, open_options, reps));
  }
  return Status::OK();
}

}  // namespace
}  // namespace oxbow::bench

int main(int argc, char** argv) {
  oxbow::Status status = oxbow::bench::Run(argc, argv);
  if (!status.ok()) return oxbow::bench::Fail("parquet_bench", status);
  return 0;
}
