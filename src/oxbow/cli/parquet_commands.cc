// `oxbow parquet write|cat|schema|meta|to-arrow|verify`: write, inspect and verify Parquet files.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "oxbow/arrow/ipc.h"
#include "oxbow/cli/commands.h"
#include "oxbow/cli/input.h"
#include "oxbow/common/file_system.h"
#include "oxbow/parquet/reader.h"
#include "oxbow/parquet/verify.h"
#include "oxbow/parquet/writer.h"
#include "oxbow/text/text.h"

namespace oxbow::cli {

namespace ipc = arrow::ipc;
namespace pq = parquet;
using arrow::RecordBatchPtr;
using arrow::SchemaPtr;

namespace {

Status WriteOut(std::string_view text) {
  if (!text.empty() && std::fwrite(text.data(), 1, text.size(), stdout) != text.size()) {
    return Status::IOError(std::string("cannot write to standard output: ") + std::strerror(errno));
  }
  return Status::OK();
}

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::vector<std::string> SplitColumns(const std::string& list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (!list.empty()) {
    const size_t comma = list.find(',', start);
    out.push_back(
        list.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

// ---- Input batches for `parquet write`: Arrow IPC, CSV or JSON Lines ----

enum class InputKind { kIpc, kCsv, kJsonLines };

Result<InputKind> DetectInput(const std::string& path, const std::string& forced,
                              std::string_view head) {
  if (forced == "ipc" || forced == "arrow") return InputKind::kIpc;
  if (forced == "csv") return InputKind::kCsv;
  if (forced == "jsonl" || forced == "json" || forced == "ndjson") return InputKind::kJsonLines;
  if (!forced.empty() && forced != "auto") {
    return Status::Invalid("unknown input format '" + forced + "' (expected ipc, csv or jsonl)");
  }
  for (const char* ext : {".arrow", ".arrows", ".ipc", ".feather"}) {
    if (EndsWith(path, ext)) return InputKind::kIpc;
  }
  if (EndsWith(path, ".csv")) return InputKind::kCsv;
  for (const char* ext : {".jsonl", ".ndjson", ".json"}) {
    if (EndsWith(path, ext)) return InputKind::kJsonLines;
  }
  // Sniff: the IPC file magic or stream continuation marker, a JSON object, else CSV.
  if (ipc::IsFileFormat(head) || (head.size() >= 4 && head.substr(0, 4) == "\xff\xff\xff\xff")) {
    return InputKind::kIpc;
  }
  const size_t first = head.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && head[first] == '{') return InputKind::kJsonLines;
  return InputKind::kCsv;
}

Result<std::vector<RecordBatchPtr>> ReadBatches(const std::string& path, const std::string& format,
                                                SchemaPtr* schema,
                                                std::shared_ptr<Buffer>* keep_alive) {
  ASSIGN_OR_RAISE(auto data, ReadInput(path));
  *keep_alive = data;
  const std::string name = DisplayName(path);
  ASSIGN_OR_RAISE(InputKind kind, DetectInput(path, format, data->view().substr(0, 4096)));
  if (kind == InputKind::kIpc) {
    if (ipc::IsFileFormat(data->view())) {
      auto reader = ipc::FileReader::Open(data);
      if (!reader.ok()) return reader.status().WithContext(name);
      *schema = (*reader)->schema();
      return (*reader)->ReadAll();
    }
    auto reader = ipc::StreamReader::Open(data);
    if (!reader.ok()) return reader.status().WithContext(name);
    *schema = (*reader)->schema();
    auto batches = (*reader)->ReadAll();
    if (!batches.ok()) return batches.status().WithContext(name);
    return batches;
  }
  const auto text_format =
      kind == InputKind::kCsv ? text::TextFormat::kCsv : text::TextFormat::kJsonLines;
  auto reader = text::TextReader::Make(text_format, data->view(), nullptr);
  if (!reader.ok()) return reader.status().WithContext(name);
  *schema = (*reader)->schema();
  auto batches = (*reader)->ReadAll();
  if (!batches.ok()) return batches.status().WithContext(name);
  return batches;
}

// ---- parquet write ----

struct WriteArgs {
  std::string input, output, input_format = "auto", compression = "zstd", dictionary = "on";
  int64_t row_group_rows = int64_t{1} << 20;
  int page_version = 1;
};

Status RunWrite(const WriteArgs& args) {
  pq::WriterOptions options;
  ASSIGN_OR_RAISE(options.compression, pq::ParseCodec(args.compression));
  if (args.dictionary != "on" && args.dictionary != "off") {
    return Status::Invalid("--dictionary must be on or off");
  }
  options.dictionary = args.dictionary == "on";
  options.row_group_rows = args.row_group_rows;
  options.data_page_version = args.page_version;
  SchemaPtr schema;
  std::shared_ptr<Buffer> input;
  ASSIGN_OR_RAISE(auto batches, ReadBatches(args.input, args.input_format, &schema, &input));
  if (args.output == "-") {
    ASSIGN_OR_RAISE(std::string bytes, pq::WriteToString(schema, batches, options));
    return WriteOut(bytes);
  }
  ASSIGN_OR_RAISE(auto writer,
                  pq::FileWriter::Open(schema, *PosixFileSystem::Default(), args.output, options));
  for (const auto& b : batches) RETURN_NOT_OK(writer->Write(*b));
  return writer->Close().status();
}

Result<std::unique_ptr<pq::FileReader>> OpenParquet(const std::string& path) {
  ASSIGN_OR_RAISE(auto data, ReadInput(path));
  return pq::FileReader::Open(std::move(data), {.path = DisplayName(path)});
}

// ---- parquet cat / to-arrow ----

struct CatArgs {
  std::string input, columns, format = "table";
  int64_t limit = -1;
};

Status RunCat(const CatArgs& args) {
  ASSIGN_OR_RAISE(auto format, text::ParseTextFormat(args.format));
  ASSIGN_OR_RAISE(auto reader, OpenParquet(args.input));
  pq::ReaderOptions options;
  options.columns = SplitColumns(args.columns);
  ASSIGN_OR_RAISE(auto batches, reader->Read(options));
  SchemaPtr schema = reader->schema();
  if (!options.columns.empty()) {
    std::vector<int> indices;
    for (const auto& c : options.columns) indices.push_back(schema->GetFieldIndex(c));
    ASSIGN_OR_RAISE(schema, schema->Select(indices));
  }
  ASSIGN_OR_RAISE(auto writer, text::TextWriter::Make(format, schema));
  std::string out;
  int64_t left = args.limit < 0 ? INT64_MAX : args.limit;
  for (const auto& b : batches) {
    if (left <= 0) break;
    auto batch = b->num_rows() > left ? b->Slice(0, left) : b;
    left -= batch->num_rows();
    RETURN_NOT_OK(writer->Write(*batch, &out));
    RETURN_NOT_OK(WriteOut(out));
    out.clear();
  }
  RETURN_NOT_OK(writer->Finish(&out));
  return WriteOut(out);
}

struct ToArrowArgs {
  std::string input, output, columns, format = "stream";
};

Status RunToArrow(const ToArrowArgs& args) {
  ASSIGN_OR_RAISE(auto reader, OpenParquet(args.input));
  pq::ReaderOptions options;
  options.columns = SplitColumns(args.columns);
  SchemaPtr schema = reader->schema();
  if (!options.columns.empty()) {
    std::vector<int> indices;
    for (const auto& c : options.columns) {
      const int i = schema->GetFieldIndex(c);
      if (i < 0) return Status::Invalid("no column named '" + c + "'");
      indices.push_back(i);
    }
    ASSIGN_OR_RAISE(schema, schema->Select(indices));
  }
  std::shared_ptr<ipc::OutputSink> sink;
  if (args.output == "-") {
    sink = ipc::FileSink::FromFd(1, /*take_ownership=*/false);
  } else {
    ASSIGN_OR_RAISE(sink, ipc::FileSink::Open(*PosixFileSystem::Default(), args.output));
  }
  if (args.format != "stream" && args.format != "file") {
    return Status::Invalid("--format must be stream or file");
  }
  std::unique_ptr<ipc::StreamWriter> stream;
  std::unique_ptr<ipc::FileWriter> file;
  if (args.format == "stream") {
    ASSIGN_OR_RAISE(stream, ipc::StreamWriter::Open(sink, schema));
  } else {
    ASSIGN_OR_RAISE(file, ipc::FileWriter::Open(sink, schema));
  }
  std::vector<int> indices;
  for (const auto& f : schema->fields()) indices.push_back(reader->schema()->GetFieldIndex(f.name));
  for (int g = 0; g < reader->num_row_groups(); ++g) {
    ASSIGN_OR_RAISE(auto batch, reader->ReadRowGroup(g, indices));
    for (int64_t off = 0; off < batch->num_rows() || off == 0; off += options.batch_rows) {
      auto piece = batch->Slice(off, options.batch_rows);
      RETURN_NOT_OK(stream ? stream->WriteRecordBatch(*piece) : file->WriteRecordBatch(*piece));
      if (batch->num_rows() == 0) break;
    }
  }
  return stream ? stream->Close() : file->Close();
}

// ---- parquet schema / meta ----

struct FileArgs {
  std::string input;
};

Status RunSchema(const FileArgs& args) {
  ASSIGN_OR_RAISE(auto reader, OpenParquet(args.input));
  std::string text = text::FormatSchema(*reader->schema());
  if (!text.empty() && text.back() != '\n') text += '\n';
  return WriteOut(text);
}

std::string Hex(std::string_view bytes) {
  static const char* kDigits = "0123456789abcdef";
  std::string out = "0x";
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

// A statistic value, readable: numbers for numeric types, text for strings, hex otherwise.
std::string FormatStat(const std::string& raw, const arrow::Field& field, pq::PhysicalType p) {
  using arrow::TypeId;
  const auto& t = field.type;
  auto load = [&](auto v) -> decltype(v) {
    if (raw.size() == sizeof(v)) std::memcpy(&v, raw.data(), sizeof(v));
    return v;
  };
  if (t.id() == TypeId::kDecimal128) {
    __int128 v = 0;
    if (p == pq::PhysicalType::kInt32) {
      v = load(int32_t{0});
    } else if (p == pq::PhysicalType::kInt64) {
      v = load(int64_t{0});
    } else {
      return Hex(raw);
    }
    const bool neg = v < 0;
    unsigned __int128 u = neg ? -static_cast<unsigned __int128>(v) : v;
    std::string reversed;  // least significant digit first
    do {
      reversed.push_back(static_cast<char>('0' + static_cast<int>(u % 10)));
      u /= 10;
    } while (u > 0);
    while (static_cast<int>(reversed.size()) <= t.scale()) reversed.push_back('0');
    std::string digits(neg ? "-" : "");
    for (size_t i = reversed.size(); i-- > 0;) {
      digits.push_back(reversed[i]);
      if (t.scale() > 0 && i == static_cast<size_t>(t.scale())) digits.push_back('.');
    }
    return digits;
  }
  switch (p) {
    case pq::PhysicalType::kBoolean: return raw.empty() ? "?" : (raw[0] ? "true" : "false");
    case pq::PhysicalType::kInt32:
      return t.is_unsigned_integer() ? std::to_string(load(uint32_t{0}))
                                     : std::to_string(load(int32_t{0}));
    case pq::PhysicalType::kInt64:
      return t.is_unsigned_integer() ? std::to_string(load(uint64_t{0}))
                                     : std::to_string(load(int64_t{0}));
    case pq::PhysicalType::kFloat: return std::to_string(load(0.0f));
    case pq::PhysicalType::kDouble: return std::to_string(load(0.0));
    case pq::PhysicalType::kByteArray:
      if (t.id() == TypeId::kString) return "\"" + raw + "\"";
      return Hex(raw);
    default: return Hex(raw);
  }
}

Status RunMeta(const FileArgs& args) {
  ASSIGN_OR_RAISE(auto reader, OpenParquet(args.input));
  const pq::FileMetaData& m = reader->metadata();
  std::string out;
  out += "created_by: " + m.created_by.value_or("(unset)") + "\n";
  out += "version: " + std::to_string(m.version) + "\n";
  out += "num_rows: " + std::to_string(m.num_rows) + "\n";
  out += "num_row_groups: " + std::to_string(m.row_groups.size()) + "\n";
  out += "columns:\n";
  for (int c = 0; c < reader->schema()->num_fields(); ++c) {
    const auto& e = m.schema[c + 1];
    out += "  " + e.name + ": " + std::string(pq::PhysicalTypeName(*e.type));
    if (e.type_length) out += "(" + std::to_string(*e.type_length) + ")";
    if (e.logical_type) out += " " + e.logical_type->ToString();
    out += e.repetition_type == pq::Repetition::kRequired ? " required" : " optional";
    if (e.field_id) out += " field_id=" + std::to_string(*e.field_id);
    out += "\n";
  }
  for (const auto& kv : m.key_value_metadata) {
    if (kv.key == "ARROW:schema") {
      out += "key_value: ARROW:schema (" + std::to_string(kv.value ? kv.value->size() : 0) +
             " bytes)\n";
    } else {
      out += "key_value: " + kv.key + "=" + kv.value.value_or("") + "\n";
    }
  }
  for (size_t g = 0; g < m.row_groups.size(); ++g) {
    const auto& rg = m.row_groups[g];
    out += "row_group " + std::to_string(g) + ": rows=" + std::to_string(rg.num_rows) +
           " total_byte_size=" + std::to_string(rg.total_byte_size) + "\n";
    for (size_t c = 0; c < rg.columns.size(); ++c) {
      const auto& cm = rg.columns[c].meta_data;
      if (!cm) continue;
      const auto& field = reader->schema()->field(static_cast<int>(c));
      out += "  " + field.name + ": codec=" + std::string(pq::CodecName(cm->codec)) + " encodings=";
      for (size_t i = 0; i < cm->encodings.size(); ++i) {
        if (i > 0) out += ",";
        out += pq::EncodingName(cm->encodings[i]);
      }
      out += " values=" + std::to_string(cm->num_values) +
             " compressed=" + std::to_string(cm->total_compressed_size) +
             " uncompressed=" + std::to_string(cm->total_uncompressed_size) +
             " data_page_offset=" + std::to_string(cm->data_page_offset);
      if (cm->dictionary_page_offset) {
        out += " dictionary_page_offset=" + std::to_string(*cm->dictionary_page_offset);
      }
      if (cm->statistics) {
        const auto& s = *cm->statistics;
        if (s.null_count) out += " nulls=" + std::to_string(*s.null_count);
        if (s.nan_count) out += " nans=" + std::to_string(*s.nan_count);
        if (s.min_value) out += " min=" + FormatStat(*s.min_value, field, cm->type);
        if (s.max_value) out += " max=" + FormatStat(*s.max_value, field, cm->type);
      }
      out += "\n";
    }
  }
  return WriteOut(out);
}

// ---- parquet verify ----

// Prints what was checked, then fails with the first problem, if any.
Status RunVerify(const FileArgs& args) {
  ASSIGN_OR_RAISE(const pq::FileVerifyReport report,
                  pq::VerifyFile(*PosixFileSystem::Default(), args.input));
  std::string out;
  const auto line = [&out](std::string_view key, int64_t value) {
    out += std::string(key) + ": " + std::to_string(value) + "\n";
  };
  line("file_size", report.file_size);
  line("row_groups", report.row_groups);
  line("column_chunks", report.column_chunks);
  line("pages", report.pages);
  line("pages_checked", report.pages_checked);
  line("pages_without_crc", report.pages_without_crc);
  line("bytes_checked", report.bytes_checked);
  line("bytes_read", report.bytes_read);
  out += report.ok() ? "result: ok\n" : "result: failed\n";
  RETURN_NOT_OK(WriteOut(out));
  return report.problem;
}

}  // namespace

void RegisterParquetCommands(CLI::App& app) {
  CLI::App* pq_cmd = app.add_subcommand("parquet", "Write and inspect Parquet files");
  pq_cmd->require_subcommand(1);

  auto write_args = std::make_shared<WriteArgs>();
  CLI::App* write =
      pq_cmd->add_subcommand("write", "Write Arrow IPC, CSV or JSON Lines as Parquet");
  write->add_option("IN", write_args->input, "Input file ('-' for stdin)")->required();
  write->add_option("OUT", write_args->output, "Parquet file to write ('-' for stdout)")
      ->required();
  write
      ->add_option("--input-format", write_args->input_format,
                   "auto (by extension, then sniffing), ipc, csv or jsonl")
      ->capture_default_str();
  write->add_option("--compression", write_args->compression, "none, snappy, gzip, zstd or lz4")
      ->capture_default_str();
  write->add_option("--row-group-rows", write_args->row_group_rows, "Rows per row group")
      ->capture_default_str();
  write->add_option("--dictionary", write_args->dictionary, "on or off")->capture_default_str();
  write->add_option("--page-version", write_args->page_version, "Data page header version, 1 or 2")
      ->capture_default_str();
  SetAction(write, [write_args] { return RunWrite(*write_args); });

  auto cat_args = std::make_shared<CatArgs>();
  CLI::App* cat = pq_cmd->add_subcommand("cat", "Print the rows as a table, JSON Lines or CSV");
  cat->add_option("FILE", cat_args->input, "Parquet file ('-' for stdin)")->required();
  cat->add_option("--columns,-c", cat_args->columns, "Comma-separated columns to print");
  cat->add_option("--format,-f", cat_args->format, "table, jsonl or csv")->capture_default_str();
  cat->add_option("--limit,-n", cat_args->limit, "Print at most N rows");
  SetAction(cat, [cat_args] { return RunCat(*cat_args); });

  auto schema_args = std::make_shared<FileArgs>();
  CLI::App* schema = pq_cmd->add_subcommand("schema", "Print the Arrow schema of a Parquet file");
  schema->add_option("FILE", schema_args->input, "Parquet file ('-' for stdin)")->required();
  SetAction(schema, [schema_args] { return RunSchema(*schema_args); });

  auto meta_args = std::make_shared<FileArgs>();
  CLI::App* meta =
      pq_cmd->add_subcommand("meta", "Print row groups, codecs, encodings, sizes and statistics");
  meta->add_option("FILE", meta_args->input, "Parquet file ('-' for stdin)")->required();
  SetAction(meta, [meta_args] { return RunMeta(*meta_args); });

  auto verify_args = std::make_shared<FileArgs>();
  CLI::App* verify = pq_cmd->add_subcommand(
      "verify", "Check the footer, page headers and page checksums without decoding values");
  verify->add_option("FILE", verify_args->input, "Parquet file")->required();
  SetAction(verify, [verify_args] { return RunVerify(*verify_args); });

  auto to_arrow_args = std::make_shared<ToArrowArgs>();
  CLI::App* to_arrow = pq_cmd->add_subcommand("to-arrow", "Convert Parquet to an Arrow IPC stream");
  to_arrow->add_option("IN", to_arrow_args->input, "Parquet file ('-' for stdin)")->required();
  to_arrow->add_option("OUT", to_arrow_args->output, "Output path ('-' for stdout)")->required();
  to_arrow->add_option("--columns,-c", to_arrow_args->columns, "Comma-separated columns to keep");
  to_arrow->add_option("--format", to_arrow_args->format, "stream or file")->capture_default_str();
  SetAction(to_arrow, [to_arrow_args] { return RunToArrow(*to_arrow_args); });
}

}  // namespace oxbow::cli
