// `oxbow lookup|snapshot|delete`: the primary-key reads and deletes of oxbowd (docs/cli.md).
#include <iostream>
#include <nlohmann/json.hpp>

#include "oxbow/arrow/compute.h"
#include "oxbow/cli/commands.h"
#include "oxbow/cli/input.h"
#include "oxbow/cli/server_support.h"
#include "oxbow/client/client.h"
#include "oxbow/flight/requests.h"
#include "oxbow/text/text.h"

namespace oxbow::cli {
namespace {

using nlohmann::json;

// Keys given on the command line (--key, repeatable) or in a file (--input).
struct KeyArgs {
  ServerArgs server;
  std::string table;
  std::vector<std::string> keys;
  std::string input;
  std::string input_format;
};

void AddKeyOptions(CLI::App* cmd, KeyArgs* args) {
  AddServerOption(cmd, &args->server);
  cmd->add_option("table", args->table, "namespace.table")->required();
  auto* key = cmd->add_option("--key", args->keys, "One key as col=value,col=value (repeatable)")
                  ->allow_extra_args(false);
  cmd->add_option("--input", args->input,
                  "File of keys (CSV, JSON Lines or Arrow IPC; - for standard input)")
      ->excludes(key);
  cmd->add_option("--input-format", args->input_format,
                  "arrow, csv or jsonl (default: from the name or bytes)");
}

std::string ColumnNames(const arrow::Schema& schema) {
  std::string names;
  for (const auto& f : schema.fields()) names += (names.empty() ? "" : ", ") + f.name;
  return names;
}

// The table's columns named by `names`, in that order.
Result<arrow::SchemaPtr> KeySchema(const json& describe, const char* which) {
  ASSIGN_OR_RAISE(auto schema, TableSchema(describe));
  std::vector<int> indices;
  for (const auto& name : describe.value(which, std::vector<std::string>())) {
    indices.push_back(schema->GetFieldIndex(name));
  }
  return schema->Select(indices);
}

// One --key "id=1,tag=a" as a JSON object of strings (the text readers parse every type from
// a string). A comma not followed by "<key column>=" belongs to the value before it.
Result<json> KeyObject(const std::string& text, const arrow::Schema& key_schema) {
  json object = json::object();
  std::string column;
  std::vector<std::string> pieces;  // text split at every comma, empty pieces kept
  for (size_t start = 0;;) {
    const size_t comma = text.find(',', start);
    pieces.push_back(text.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  for (const auto& piece : pieces) {
    const size_t eq = piece.find('=');
    const std::string name = eq == std::string::npos ? "" : piece.substr(0, eq);
    if (!name.empty() && key_schema.GetFieldIndex(name) >= 0) {
      if (object.contains(name)) {
        return Status::Invalid("--key '" + text + "' gives '" + name + "' twice");
      }
      column = name;
      object[column] = piece.substr(eq + 1);
    } else if (!column.empty() && eq == std::string::npos) {
      object[column] = object[column].get<std::string>() + "," + piece;
    } else {
      return Status::Invalid(
          "--key '" + text + "': '" + piece +
          "' is not key_column=value; the key columns are: " + ColumnNames(key_schema));
    }
  }
  for (const auto& f : key_schema.fields()) {
    if (!object.contains(f.name)) {
      return Status::Invalid("--key '" + text + "' lacks '" + f.name +
                             "'; the key columns are: " + ColumnNames(key_schema));
    }
  }
  return object;
}

// The key columns of an Arrow input batch, by name, cast to the table's key types (the server
// reads the keys with the schema the stream started with).
Result<arrow::RecordBatchPtr> KeyColumns(const arrow::RecordBatch& batch,
                                         const arrow::SchemaPtr& key_schema,
                                         const std::string& input) {
  std::vector<arrow::Array> columns;
  for (const auto& f : key_schema->fields()) {
    const int i = batch.schema()->GetFieldIndex(f.name);
    if (i < 0) {
      return Status::Invalid(input + " has no key column '" + f.name +
                             "'; the key columns are: " + ColumnNames(*key_schema));
    }
    auto cast = arrow::Cast(batch.column(i), f.type);
    if (!cast.ok()) {
      return Status::Invalid(input + ": key column '" + f.name + "' is " +
                             batch.schema()->field(i).type.ToString() + ", the table's is " +
                             f.type.ToString() + ": " + cast.status().message());
    }
    columns.push_back(std::move(cast).ValueOrDie());
  }
  return arrow::RecordBatch::Make(key_schema, batch.num_rows(), std::move(columns));
}

// The keys of the command line or of the input file as batches of `key_schema`.
Result<std::vector<arrow::RecordBatchPtr>> ReadKeys(const KeyArgs& args,
                                                    const arrow::SchemaPtr& key_schema) {
  if (args.keys.empty() && args.input.empty()) {
    return Status::Invalid("give keys with --key col=value,... or --input FILE");
  }
  text::ReadOptions options;
  if (!args.keys.empty()) {  // one batch per key, so that an error names its --key
    std::vector<arrow::RecordBatchPtr> batches;
    for (const auto& key : args.keys) {
      ASSIGN_OR_RAISE(json object, KeyObject(key, *key_schema));
      auto batch = ReadRows("jsonl", Buffer::FromString(object.dump()), key_schema, options);
      if (!batch.ok()) return batch.status().WithContext("--key '" + key + "'");
      batches.insert(batches.end(), batch->begin(), batch->end());
    }
    return batches;
  }
  ASSIGN_OR_RAISE(auto data, ReadInput(args.input));
  const std::string format = InputFormat(args.input_format, args.input, data->view());
  options.ignore_unknown_fields = true;  // a file of whole rows names its keys too
  auto read = ReadRows(format, data, key_schema, options);
  if (!read.ok()) return read.status().WithContext(DisplayName(args.input));
  std::vector<arrow::RecordBatchPtr> batches = std::move(read).ValueOrDie();
  if (format != "arrow") return batches;
  for (auto& batch : batches) {
    ASSIGN_OR_RAISE(batch, KeyColumns(*batch, key_schema, DisplayName(args.input)));
  }
  return batches;
}

Result<json> DescribePrimaryKeyTable(client::Client& c, const std::string& server,
                                     const std::string& table, const std::string& what) {
  ASSIGN_OR_RAISE(json describe, Action(c, server, "describe_table", {{"table", table}}));
  if (describe.value("primary_key", json::array()).empty()) {
    return Status::Invalid(table + " is a log table: " + what + " need a primary key");
  }
  return describe;
}

// Prints batches in a text format as they come.
class Printer {
 public:
  static Result<Printer> Make(const std::string& format, const arrow::SchemaPtr& schema) {
    ASSIGN_OR_RAISE(auto parsed, text::ParseTextFormat(format));
    ASSIGN_OR_RAISE(auto writer, text::TextWriter::Make(parsed, schema));
    return Printer(std::move(writer));
  }
  Status Print(const arrow::RecordBatch& batch) {
    std::string out;
    RETURN_NOT_OK(writer_->Write(batch, &out));
    std::cout << out;
    rows_ += batch.num_rows();
    return Status::OK();
  }
  Status Finish() {
    std::string out;
    RETURN_NOT_OK(writer_->Finish(&out));
    std::cout << out << std::flush;
    return Status::OK();
  }
  int64_t rows() const { return rows_; }

 private:
  explicit Printer(std::unique_ptr<text::TextWriter> writer) : writer_(std::move(writer)) {}
  std::unique_ptr<text::TextWriter> writer_;
  int64_t rows_ = 0;
};

struct LookupArgs : KeyArgs {
  bool prefix = false;
  std::string columns;
  std::string format = "table";
};

// Every batch of keys goes through one DoExchange, answered batch by batch.
Status Lookup(const LookupArgs& args) {
  ASSIGN_OR_RAISE(auto c, Connect(args.server));
  ASSIGN_OR_RAISE(json describe,
                  DescribePrimaryKeyTable(*c, args.server.address, args.table, "lookups"));
  ASSIGN_OR_RAISE(auto key_schema, KeySchema(describe, args.prefix ? "bucket_key" : "primary_key"));
  ASSIGN_OR_RAISE(auto keys, ReadKeys(args, key_schema));
  flight::Command command;
  command.table = args.table;
  command.op = flight::Command::Op::kLookup;
  command.prefix = args.prefix;
  if (!args.columns.empty()) command.columns = SplitList(args.columns);
  auto exchange = c->DoExchange(command, key_schema);
  if (!exchange.ok()) return WithServer(exchange.status(), args.server.address);
  auto& stream = **exchange;
  ASSIGN_OR_RAISE(auto printer, Printer::Make(args.format, stream.schema()));
  for (const auto& batch : keys) {
    RETURN_NOT_OK(WithServer(stream.Send(*batch), args.server.address));
    ASSIGN_OR_RAISE(auto found, stream.Next());
    if (!found) return Status::IOError("the server ended the lookup before answering");
    RETURN_NOT_OK(printer.Print(*found->batch));
  }
  RETURN_NOT_OK(stream.DoneWriting());
  ASSIGN_OR_RAISE(auto extra, stream.Next());
  if (extra) return Status::IOError("the server answered a lookup nobody asked");
  RETURN_NOT_OK(WithServer(stream.Finish(), args.server.address));
  return printer.Finish();
}

struct SnapshotArgs {
  ServerArgs server;
  std::string table;
  int bucket = -1;
  std::string columns;
  std::string format = "table";
};

// Prints the current rows; the changelog offsets they are consistent with go to stderr.
Status Snapshot(const SnapshotArgs& args) {
  ASSIGN_OR_RAISE(auto c, Connect(args.server));
  flight::Ticket ticket;
  ticket.kind = flight::Ticket::Kind::kSnapshot;
  ticket.table = args.table;
  ticket.has_bucket = args.bucket >= 0;
  ticket.bucket = std::max(args.bucket, 0);
  if (!args.columns.empty()) ticket.columns = SplitList(args.columns);
  auto stream = c->DoGet(flight::TicketToJson(ticket));
  if (!stream.ok()) return WithServer(stream.status(), args.server.address);
  ASSIGN_OR_RAISE(auto printer, Printer::Make(args.format, (*stream)->schema()));
  std::string offsets;
  while (true) {
    auto chunk = (*stream)->Next();
    if (!chunk.ok()) return WithServer(chunk.status(), args.server.address);
    if (!*chunk) break;
    if (offsets.empty()) offsets = (*chunk)->app_metadata;
    RETURN_NOT_OK(printer.Print(*(*chunk)->batch));
  }
  RETURN_NOT_OK(printer.Finish());
  json j = json::parse(offsets, nullptr, false);
  if (j.is_discarded() || !j.contains("offsets") || !j["offsets"].is_array()) {
    return Status::Invalid("the snapshot's first message carries no offsets: '" + offsets + "'");
  }
  std::cerr << "snapshot of " << args.table << ": " << printer.rows()
            << " rows, consistent with the changelog before offsets";
  const char* sep = " ";
  for (const auto& o : j["offsets"]) {
    std::cerr << sep << "bucket " << o.value("bucket", 0) << " < "
              << o.value("next_offset", int64_t{0});
    sep = ", ";
  }
  std::cerr << "\n";
  return Status::OK();
}

Status Delete(const KeyArgs& args) {
  ASSIGN_OR_RAISE(auto c, Connect(args.server));
  ASSIGN_OR_RAISE(json describe,
                  DescribePrimaryKeyTable(*c, args.server.address, args.table, "deletes"));
  ASSIGN_OR_RAISE(auto key_schema, KeySchema(describe, "primary_key"));
  ASSIGN_OR_RAISE(auto keys, ReadKeys(args, key_schema));
  int64_t given = 0;
  for (const auto& b : keys) given += b->num_rows();
  flight::Command command;
  command.table = args.table;
  command.op = flight::Command::Op::kDelete;
  ASSIGN_OR_RAISE(auto put, c->DoPut(command, key_schema));
  // Each deleted row is one -D record; a missing key emits nothing.
  ASSIGN_OR_RAISE(int64_t deleted, PutAll(*put, keys, args.server.address));
  std::cerr << "deleted " << deleted << " rows from " << args.table << " (" << given
            << " keys given)\n";
  return Status::OK();
}

}  // namespace

void RegisterKeyCommands(CLI::App& app) {
  auto lookup = std::make_shared<LookupArgs>();
  auto* cmd = app.add_subcommand("lookup", "Rows of a primary-key table by key");
  AddKeyOptions(cmd, lookup.get());
  cmd->add_flag("--prefix", lookup->prefix,
                "Keys are bucket-key values: every row whose key starts with them");
  cmd->add_option("--columns", lookup->columns, "Columns to print (a,b)");
  cmd->add_option("--format", lookup->format, "table, jsonl or csv")->capture_default_str();
  SetAction(cmd, [lookup]() { return Lookup(*lookup); });

  auto snapshot = std::make_shared<SnapshotArgs>();
  cmd = app.add_subcommand("snapshot", "The current rows of a primary-key table");
  AddServerOption(cmd, &snapshot->server);
  cmd->add_option("table", snapshot->table, "namespace.table")->required();
  cmd->add_option("--bucket", snapshot->bucket, "Only this bucket (default: all)");
  cmd->add_option("--columns", snapshot->columns, "Columns to print (a,b)");
  cmd->add_option("--format", snapshot->format, "table, jsonl or csv")->capture_default_str();
  SetAction(cmd, [snapshot]() { return Snapshot(*snapshot); });

  auto del = std::make_shared<KeyArgs>();
  cmd = app.add_subcommand("delete", "Delete rows of a primary-key table by key");
  AddKeyOptions(cmd, del.get());
  SetAction(cmd, [del]() { return Delete(*del); });
}

}  // namespace oxbow::cli
