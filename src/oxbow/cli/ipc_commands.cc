// `oxbow ipc schema|cat|copy`: inspect and rewrite Arrow IPC streams and files.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <iterator>
#include <optional>

#include "oxbow/arrow/ipc.h"
#include "oxbow/cli/commands.h"
#include "oxbow/cli/input.h"
#include "oxbow/text/text.h"

namespace oxbow::cli {

namespace ipc = arrow::ipc;
using arrow::RecordBatchPtr;
using arrow::SchemaPtr;

namespace {

// Batches from an IPC stream or file (sniffed by its magic), one at a time.
class IpcInput {
 public:
  static Result<IpcInput> Open(const std::string& path) {
    IpcInput in;
    ASSIGN_OR_RAISE(auto data, ReadInput(path));
    const std::string name = DisplayName(path);
    if (data->size() == 0) {
      return Status::Invalid(name + " is empty: not an Arrow IPC stream or file");
    }
    in.is_file_ = ipc::IsFileFormat(data->view());
    Status st;
    if (in.is_file_) {
      auto reader = ipc::FileReader::Open(data);
      st = reader.status();
      if (st.ok()) in.file_ = std::move(reader).ValueOrDie();
    } else {
      auto reader = ipc::StreamReader::Open(data);
      st = reader.status();
      if (st.ok()) in.stream_ = std::move(reader).ValueOrDie();
    }
    if (!st.ok()) {
      return Status::Invalid(name +
                             (in.is_file_ ? " is not a valid Arrow IPC file: "
                                          : " is not an Arrow IPC stream or file: ") +
                             st.message());
    }
    in.name_ = name;
    return in;
  }

  bool is_file() const { return is_file_; }
  const SchemaPtr& schema() const { return is_file_ ? file_->schema() : stream_->schema(); }

  // The next batch, or nullptr at the end.
  Result<RecordBatchPtr> Next() {
    Result<RecordBatchPtr> batch = RecordBatchPtr();
    if (is_file_) {
      if (next_ < file_->num_record_batches()) batch = file_->ReadRecordBatch(next_++);
    } else {
      batch = stream_->Next();
    }
    if (!batch.ok()) {
      return Status::Invalid(name_ + ": cannot read record batch " + std::to_string(count_) + ": " +
                             batch.status().message());
    }
    if (*batch) ++count_;
    return batch;
  }

 private:
  std::string name_;
  bool is_file_ = false;
  std::unique_ptr<ipc::FileReader> file_;
  std::unique_ptr<ipc::StreamReader> stream_;
  int next_ = 0;
  int64_t count_ = 0;
};

// Field indices for a comma-separated column list; empty `list` selects everything.
Result<std::optional<std::vector<int>>> ResolveColumns(const arrow::Schema& schema,
                                                       const std::string& list) {
  if (list.empty()) return std::optional<std::vector<int>>();
  std::vector<int> indices;
  size_t start = 0;
  while (true) {
    size_t comma = list.find(',', start);
    std::string name = list.substr(start, comma == std::string::npos ? comma : comma - start);
    int i = schema.GetFieldIndex(name);
    if (i < 0) {
      std::string valid;
      for (const auto& f : schema.fields()) valid += (valid.empty() ? "" : ", ") + f.name;
      return Status::Invalid("unknown column '" + name + "'; the columns are: " + valid);
    }
    indices.push_back(i);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return std::optional<std::vector<int>>(std::move(indices));
}

Status WriteStdout(std::string_view text) {
  if (!text.empty() && std::fwrite(text.data(), 1, text.size(), stdout) != text.size()) {
    return Status::IOError(std::string("cannot write to standard output: ") + std::strerror(errno));
  }
  return Status::OK();
}

struct SchemaArgs {
  std::string input;
};

Status RunSchema(const SchemaArgs& args) {
  ASSIGN_OR_RAISE(auto in, IpcInput::Open(args.input));
  std::string text = text::FormatSchema(*in.schema());
  if (!text.empty()) text.push_back('\n');
  return WriteStdout(text);
}

struct CatArgs {
  std::string input;
  std::string format = "table";
  std::string columns;
  int64_t limit = -1;
};

Status RunCat(const CatArgs& args) {
  ASSIGN_OR_RAISE(auto format, text::ParseTextFormat(args.format));
  ASSIGN_OR_RAISE(auto in, IpcInput::Open(args.input));
  ASSIGN_OR_RAISE(auto columns, ResolveColumns(*in.schema(), args.columns));
  SchemaPtr schema = in.schema();
  if (columns) {
    ASSIGN_OR_RAISE(schema, schema->Select(*columns));
  }
  ASSIGN_OR_RAISE(auto writer, text::TextWriter::Make(format, schema));
  int64_t remaining = args.limit < 0 ? INT64_MAX : args.limit;
  std::string out;
  while (remaining > 0) {
    ASSIGN_OR_RAISE(auto batch, in.Next());
    if (!batch) break;
    if (columns) {
      ASSIGN_OR_RAISE(batch, batch->SelectColumns(*columns));
    }
    if (batch->num_rows() > remaining) batch = batch->Slice(0, remaining);
    remaining -= batch->num_rows();
    out.clear();
    RETURN_NOT_OK(writer->Write(*batch, &out));
    RETURN_NOT_OK(WriteStdout(out));
  }
  out.clear();
  RETURN_NOT_OK(writer->Finish(&out));
  RETURN_NOT_OK(WriteStdout(out));
  return std::fflush(stdout) == 0
             ? Status::OK()
             : Status::IOError(std::string("cannot write to standard output: ") +
                               std::strerror(errno));
}

struct CopyArgs {
  std::string input;
  std::string output;
  std::string format;  // empty: same as the input
  std::string compression = "none";
  std::string columns;
};

bool SameFile(const std::string& a, const std::string& b) {
  struct stat sa, sb;
  return a != "-" && b != "-" && ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 &&
         sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

// Writes every batch of `in` to `sink`.
Status CopyBatches(IpcInput& in, const std::optional<std::vector<int>>& columns,
                   const SchemaPtr& schema, bool file_format, const ipc::WriteOptions& options,
                   std::shared_ptr<ipc::OutputSink> sink) {
  std::unique_ptr<ipc::FileWriter> file_writer;
  std::unique_ptr<ipc::StreamWriter> stream_writer;
  if (file_format) {
    ASSIGN_OR_RAISE(file_writer, ipc::FileWriter::Open(sink, schema, options));
  } else {
    ASSIGN_OR_RAISE(stream_writer, ipc::StreamWriter::Open(sink, schema, options));
  }
  while (true) {
    ASSIGN_OR_RAISE(auto batch, in.Next());
    if (!batch) break;
    if (columns) {
      ASSIGN_OR_RAISE(batch, batch->SelectColumns(*columns));
    }
    RETURN_NOT_OK(file_writer ? file_writer->WriteRecordBatch(*batch)
                              : stream_writer->WriteRecordBatch(*batch));
  }
  return file_writer ? file_writer->Close() : stream_writer->Close();
}

Status RunCopy(const CopyArgs& args) {
  ASSIGN_OR_RAISE(auto codec, arrow::ParseCodec(args.compression));
  if (SameFile(args.input, args.output)) {
    return Status::Invalid("input and output are the same file '" + args.output + "'");
  }
  ASSIGN_OR_RAISE(auto in, IpcInput::Open(args.input));
  const bool file_format = args.format.empty() ? in.is_file() : args.format == "file";
  ASSIGN_OR_RAISE(auto columns, ResolveColumns(*in.schema(), args.columns));
  SchemaPtr schema = in.schema();
  if (columns) {
    ASSIGN_OR_RAISE(schema, schema->Select(*columns));
  }
  ipc::WriteOptions options;
  options.codec = codec;
  std::shared_ptr<ipc::OutputSink> sink;
  if (args.output == "-") {
    sink = ipc::FileSink::FromFd(STDOUT_FILENO, /*take_ownership=*/false);
  } else {
    ASSIGN_OR_RAISE(sink, ipc::FileSink::Open(*PosixFileSystem::Default(), args.output));
  }
  Status st = CopyBatches(in, columns, schema, file_format, options, sink);
  if (!st.ok() && args.output != "-") {
    (void)sink->Close();
    ::unlink(args.output.c_str());  // leave no half-written file behind
  }
  return st;
}

}  // namespace

void RegisterIpcCommands(CLI::App& app) {
  CLI::App* ipc_cmd = app.add_subcommand("ipc", "Inspect and rewrite Arrow IPC streams and files");
  ipc_cmd->require_subcommand(1);

  auto schema_args = std::make_shared<SchemaArgs>();
  CLI::App* schema = ipc_cmd->add_subcommand("schema", "Print the schema, as pyarrow prints it");
  schema->add_option("FILE", schema_args->input, "IPC stream or file ('-' for stdin)")->required();
  SetAction(schema, [schema_args] { return RunSchema(*schema_args); });

  auto cat_args = std::make_shared<CatArgs>();
  CLI::App* cat = ipc_cmd->add_subcommand("cat", "Print the rows as a table, JSON Lines or CSV");
  cat->add_option("FILE", cat_args->input, "IPC stream or file ('-' for stdin)")->required();
  cat->add_option("--format,-f", cat_args->format, "table, jsonl or csv")
      ->check(CLI::IsMember({"table", "jsonl", "csv"}))
      ->capture_default_str();
  cat->add_option("--columns,-c", cat_args->columns, "Comma-separated columns to print");
  cat->add_option("--limit,-n", cat_args->limit, "Print at most N rows")
      ->check(CLI::NonNegativeNumber);
  SetAction(cat, [cat_args] { return RunCat(*cat_args); });

  auto copy_args = std::make_shared<CopyArgs>();
  CLI::App* copy = ipc_cmd->add_subcommand(
      "copy", "Read an IPC stream or file and write it again, optionally projected/compressed");
  copy->add_option("IN", copy_args->input, "IPC stream or file ('-' for stdin)")->required();
  copy->add_option("OUT", copy_args->output, "Output path ('-' for stdout)")->required();
  copy->add_option("--format", copy_args->format, "stream or file (default: as the input)")
      ->check(CLI::IsMember({"stream", "file"}));
  copy->add_option("--compression", copy_args->compression, "none, lz4 or zstd")
      ->check(CLI::IsMember({"none", "lz4", "zstd"}))
      ->capture_default_str();
  copy->add_option("--columns,-c", copy_args->columns, "Comma-separated columns to keep");
  SetAction(copy, [copy_args] { return RunCopy(*copy_args); });
}

}  // namespace oxbow::cli
