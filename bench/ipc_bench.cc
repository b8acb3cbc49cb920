// The Oxbow side of the Arrow IPC benchmark (bench/ipc_bench.py runs pyarrow on the same bytes).
//
//   ipc_bench generate --out data.arrow --batches N --rows R   (the dataset of datagen.h)
//   ipc_bench --input data.arrow [--stream-none F --stream-lz4 F --stream-zstd F]
//             [--reps 3] [--project id,ts] [--ops encode,decode,project] [--codecs none,lz4,zstd]
//
// --input is an uncompressed Arrow IPC file: its batches are what gets encoded. Each --stream-*
// is an Arrow IPC stream (written by pyarrow with that codec): what gets decoded. Everything is
// read into memory first; every timing is single-threaded, repeated --reps times, and reported
// as best and median seconds, one JSON object per line.

#include <algorithm>
#include <cstdio>
#include <functional>
#include <sstream>

#include "bench_util.h"
#include "datagen.h"
#include "oxbow/arrow/ipc.h"

namespace oxbow::bench {
namespace {

namespace ipc = arrow::ipc;
using arrow::Codec;
using arrow::RecordBatchPtr;

// Runs `body` `reps` times and times each run; `body` may return work to free outside the clock.
Result<Timing> Repeat(int reps, const std::function<Result<std::shared_ptr<void>>()>& body) {
  std::vector<double> seconds;
  for (int i = 0; i < reps; ++i) {
    double start = NowSeconds();
    ASSIGN_OR_RAISE(auto keep, body());
    seconds.push_back(NowSeconds() - start);
    keep.reset();
  }
  return Summarize(std::move(seconds));
}

// A sink whose one std::string is reserved up front.
class PresizedSink : public ipc::OutputSink {
 public:
  explicit PresizedSink(int64_t capacity) {
    data_.resize(static_cast<size_t>(capacity));  // touches every page
    data_.clear();
  }
  void Clear() { data_.clear(); }
  Status Write(std::string_view bytes) override {
    data_.append(bytes);
    return Status::OK();
  }

 private:
  std::string data_;
};

Status BenchEncode(const arrow::SchemaPtr& schema, const std::vector<RecordBatchPtr>& batches,
                   Codec codec, int reps) {
  ipc::WriteOptions options;
  options.codec = codec;
  // Into one contiguous std::string: the like-for-like peer of pyarrow's BufferOutputStream.
  int64_t bytes = 0;
  ASSIGN_OR_RAISE(Timing contiguous, Repeat(reps, [&]() -> Result<std::shared_ptr<void>> {
                    auto sink = std::make_shared<ipc::StringSink>();
                    ASSIGN_OR_RAISE(auto writer, ipc::StreamWriter::Open(sink, schema, options));
                    for (const auto& batch : batches)
                      RETURN_NOT_OK(writer->WriteRecordBatch(*batch));
                    RETURN_NOT_OK(writer->Close());
                    bytes = static_cast<int64_t>(sink->data().size());
                    return std::shared_ptr<void>(sink);
                  }));
  JsonLine()
      .Add("op", "encode")
      .Add("codec", std::string(arrow::CodecName(codec)))
      .Add("sink", "contiguous")
      .Add("best", contiguous.best)
      .Add("median", contiguous.median)
      .Add("bytes", bytes)
      .Print();
  // Into one std::string reserved (and touched) once, outside the clock, and reused: the encoder
  // plus one copy, without the sink's growth or page faults (the peer is pyarrow's
  // FixedSizeBufferWriter over one pre-allocated buffer).
  auto sink = std::make_shared<PresizedSink>(bytes);
  ASSIGN_OR_RAISE(Timing presized, Repeat(reps, [&]() -> Result<std::shared_ptr<void>> {
                    sink->Clear();
                    ASSIGN_OR_RAISE(auto writer, ipc::StreamWriter::Open(sink, schema, options));
                    for (const auto& batch : batches)
                      RETURN_NOT_OK(writer->WriteRecordBatch(*batch));
                    RETURN_NOT_OK(writer->Close());
                    return std::shared_ptr<void>();
                  }));
  JsonLine()
      .Add("op", "encode")
      .Add("codec", std::string(arrow::CodecName(codec)))
      .Add("sink", "presized")
      .Add("best", presized.best)
      .Add("median", presized.median)
      .Add("bytes", bytes)
      .Print();
  // Into a list of buffers that references the batches' memory (what the server and Flight use).
  ASSIGN_OR_RAISE(Timing list, Repeat(reps, [&]() -> Result<std::shared_ptr<void>> {
                    auto sink = std::make_shared<ipc::BufferListSink>();
                    ASSIGN_OR_RAISE(auto writer, ipc::StreamWriter::Open(sink, schema, options));
                    for (const auto& batch : batches)
                      RETURN_NOT_OK(writer->WriteRecordBatch(*batch));
                    RETURN_NOT_OK(writer->Close());
                    bytes = sink->size();
                    return std::shared_ptr<void>(sink);
                  }));
  JsonLine()
      .Add("op", "encode")
      .Add("codec", std::string(arrow::CodecName(codec)))
      .Add("sink", "buffer_list")
      .Add("best", list.best)
      .Add("median", list.median)
      .Add("bytes", bytes)
      .Print();
  return Status::OK();
}

Status BenchDecode(const std::shared_ptr<Buffer>& stream, Codec codec, bool validate, int reps) {
  ipc::ReadOptions options;
  options.validate = validate;
  int64_t rows = 0;
  ASSIGN_OR_RAISE(Timing t, Repeat(reps, [&]() -> Result<std::shared_ptr<void>> {
                    ASSIGN_OR_RAISE(auto reader, ipc::StreamReader::Open(stream, options));
                    ASSIGN_OR_RAISE(auto batches, reader->ReadAll());
                    rows = 0;
                    for (const auto& b : batches) rows += b->num_rows();
                    return std::shared_ptr<void>(
                        std::make_shared<std::vector<RecordBatchPtr>>(std::move(batches)));
                  }));
  JsonLine()
      .Add("op", "decode")
      .Add("codec", std::string(arrow::CodecName(codec)))
      .Add("validate", validate ? 1 : 0)
      .Add("best", t.best)
      .Add("median", t.median)
      .Add("rows", rows)
      .Add("bytes", stream->size())
      .Print();
  return Status::OK();
}

// Full decode vs projection (RecordBatchProjector, as the server does) + decode of the projected
// message (as the client does), both starting from the raw stream bytes.
Status BenchProject(const std::shared_ptr<Buffer>& stream, Codec codec,
                    const std::vector<std::string>& names, int reps) {
  int64_t offset = 0;
  ASSIGN_OR_RAISE(auto first, ipc::ReadMessage(stream, &offset));
  if (!first || first->type != ipc::MessageType::kSchema) {
    return Status::Invalid("stream does not start with a schema message");
  }
  ASSIGN_OR_RAISE(auto schema, ipc::DecodeSchema(*first->metadata));
  const int64_t batches_start = offset;
  std::vector<int> columns;
  for (const auto& name : names) {
    int index = schema->GetFieldIndex(name);
    if (index < 0) return Status::Invalid("no column '" + name + "' to project");
    columns.push_back(index);
  }
  ASSIGN_OR_RAISE(auto projector, ipc::RecordBatchProjector::Make(schema, columns));
  const ipc::ReadOptions options;  // validation on, as a client decodes untrusted bytes

  int64_t full_bytes = 0;
  ASSIGN_OR_RAISE(Timing full, Repeat(reps, [&]() -> Result<std::shared_ptr<void>> {
                    auto out = std::make_shared<std::vector<RecordBatchPtr>>();
                    int64_t pos = batches_start;
                    full_bytes = 0;
                    while (true) {
                      ASSIGN_OR_RAISE(auto message, ipc::ReadMessage(stream, &pos));
                      if (!message) break;
                      full_bytes += message->body->size();
                      ASSIGN_OR_RAISE(auto batch,
                                      ipc::DecodeRecordBatch(schema, *message, options));
                      out->push_back(std::move(batch));
                    }
                    return std::shared_ptr<void>(out);
                  }));
  int64_t projected_bytes = 0;
  auto run_projected = [&](bool decode) -> Result<std::shared_ptr<void>> {
    auto out = std::make_shared<std::vector<RecordBatchPtr>>();
    auto kept = std::make_shared<std::vector<ipc::EncodedMessage>>();
    int64_t pos = batches_start;
    projected_bytes = 0;
    while (true) {
      ASSIGN_OR_RAISE(auto message, ipc::ReadMessage(stream, &pos));
      if (!message) break;
      ASSIGN_OR_RAISE(auto projected, projector.Project(*message));
      projected_bytes += projected.body_length;
      if (!decode) {
        kept->push_back(std::move(projected));
        continue;
      }
      // The client receives the projected body as one contiguous buffer.
      ASSIGN_OR_RAISE(auto body, projected.BodyAsBuffer());
      ASSIGN_OR_RAISE(auto raw, ipc::ParseMessage(projected.metadata, body));
      ASSIGN_OR_RAISE(auto batch,
                      ipc::DecodeRecordBatch(projector.projected_schema(), raw, options));
      out->push_back(std::move(batch));
    }
    if (!decode) return std::shared_ptr<void>(kept);
    return std::shared_ptr<void>(out);
  };
  ASSIGN_OR_RAISE(Timing projected, Repeat(reps, [&] { return run_projected(true); }));
  ASSIGN_OR_RAISE(Timing project_only, Repeat(reps, [&] { return run_projected(false); }));
  JsonLine()
      .Add("op", "project")
      .Add("codec", std::string(arrow::CodecName(codec)))
      .Add("full_best", full.best)
      .Add("full_median", full.median)
      .Add("projected_best", projected.best)
      .Add("projected_median", projected.median)
      .Add("project_only_best", project_only.best)
      .Add("full_bytes", full_bytes)
      .Add("projected_bytes", projected_bytes)
      .Print();
  return Status::OK();
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

Status Generate(const Flags& flags) {
  const std::string out = flags.Get("out", "");
  if (out.empty()) return Status::Invalid("generate needs --out <file>");
  const int64_t batches = flags.GetInt("batches", 16);
  const int64_t rows = flags.GetInt("rows", 65536);
  double start = NowSeconds();
  RETURN_NOT_OK(WriteBenchFile(out, batches, rows));
  JsonLine()
      .Add("op", "generate")
      .Add("rows", batches * rows)
      .Add("seconds", NowSeconds() - start)
      .Print();
  return Status::OK();
}

Status Run(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "generate") {
    ASSIGN_OR_RAISE(Flags flags, Flags::Parse(argc, argv, 2));
    return Generate(flags);
  }
  ASSIGN_OR_RAISE(Flags flags, Flags::Parse(argc, argv, 1));
  const int reps = static_cast<int>(flags.GetInt("reps", 3));
  const std::string input = flags.Get("input", "");
  if (input.empty()) return Status::Invalid("--input <uncompressed Arrow IPC file> is required");

  ASSIGN_OR_RAISE(auto data, ReadFileToMemory(input));
  ASSIGN_OR_RAISE(auto reader, ipc::FileReader::Open(data));
  ASSIGN_OR_RAISE(auto batches, reader->ReadAll());
  int64_t rows = 0;
  for (const auto& b : batches) rows += b->num_rows();
  JsonLine()
      .Add("op", "load")
      .Add("rows", rows)
      .Add("batches", static_cast<int64_t>(batches.size()))
      .Add("columns", reader->schema()->num_fields())
      .Add("file_bytes", data->size())
      .Print();

  const std::vector<std::string> project = SplitCommas(flags.Get("project", "id,ts"));
  // --ops and --codecs narrow the run (e.g. to profile one operation).
  const std::vector<std::string> ops = SplitCommas(flags.Get("ops", "encode,decode,project"));
  const std::vector<std::string> codecs = SplitCommas(flags.Get("codecs", "none,lz4,zstd"));
  auto wanted = [](const std::vector<std::string>& list, std::string_view item) {
    return std::find(list.begin(), list.end(), item) != list.end();
  };
  for (Codec codec : {Codec::kNone, Codec::kLz4Frame, Codec::kZstd}) {
    if (!wanted(codecs, arrow::CodecName(codec))) continue;
    if (wanted(ops, "encode")) RETURN_NOT_OK(BenchEncode(reader->schema(), batches, codec, reps));
    std::string stream_path = flags.Get("stream-" + std::string(arrow::CodecName(codec)), "");
    if (stream_path.empty()) continue;
    ASSIGN_OR_RAISE(auto stream, ReadFileToMemory(stream_path));
    if (wanted(ops, "decode")) {
      RETURN_NOT_OK(BenchDecode(stream, codec, /*validate=*/true, reps));
      RETURN_NOT_OK(BenchDecode(stream, codec, /*validate=*/false, reps));
    }
    if (wanted(ops, "project")) RETURN_NOT_OK(BenchProject(stream, codec, project, reps));
  }
  return Status::OK();
}

}  // namespace
}  // namespace oxbow::bench

int main(int argc, char** argv) {
  oxbow::Status status = oxbow::bench::Run(argc, argv);
  if (!status.ok()) return oxbow::bench::Fail("ipc_bench", status);
  return 0;
}
