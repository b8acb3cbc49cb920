// `oxbow table|produce|consume`: oxbowd's tables through the Flight API (docs/cli.md).
#include <atomic>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "oxbow/arrow/ipc.h"
#include "oxbow/catalog/descriptor.h"
#include "oxbow/cli/commands.h"
#include "oxbow/cli/compact_schema.h"
#include "oxbow/cli/input.h"
#include "oxbow/cli/server_support.h"
#include "oxbow/client/client.h"
#include "oxbow/common/parse.h"
#include "oxbow/flight/requests.h"
#include "oxbow/text/text.h"

namespace oxbow::cli {
namespace {

namespace ipc = arrow::ipc;
using nlohmann::json;

// The column a primary-key table's changelog adds (docs/api.md).
constexpr std::string_view kChangeTypeColumn = "_change_type";

void PrintDescribe(const json& d) {
  std::cout << "table:     " << d.value("table", "") << "\n";
  std::cout << "buckets:   " << d.value("buckets", 0);
  if (d.contains("bucket_key") && !d["bucket_key"].empty()) {
    std::cout << " (by";
    for (const auto& k : d["bucket_key"]) std::cout << " " << k.get<std::string>();
    std::cout << ")";
  }
  std::cout << "\n";
  if (d.contains("primary_key") && !d["primary_key"].empty()) {
    std::cout << "primary key:";
    for (const auto& k : d["primary_key"]) std::cout << " " << k.get<std::string>();
    std::cout << "\n";
  }
  std::cout << "schema:\n";
  auto schema = TableSchema(d);
  if (schema.ok()) {
    for (const auto& f : (*schema)->fields()) {
      std::cout << "  " << f.ToString();
      if (auto doc = catalog::FieldDoc(f)) std::cout << "  -- " << *doc;
      std::cout << "\n";
    }
  }
  if (d.contains("properties") && !d["properties"].empty()) {
    std::cout << "properties:\n";
    for (const auto& [k, v] : d["properties"].items()) {
      std::cout << "  " << k << " = " << v.get<std::string>() << "\n";
    }
  }
  if (d.contains("bucket_offsets")) {
    std::cout << "offsets:\n";
    for (const auto& b : d["bucket_offsets"]) {
      std::cout << "  bucket " << b["bucket"].get<int>() << ": earliest "
                << b["earliest_offset"].get<int64_t>() << ", next "
                << b["next_offset"].get<int64_t>() << "\n";
    }
  }
}

struct TableArgs {
  ServerArgs server;
  std::string table;
  std::string schema;
  int buckets = 1;
  std::string bucket_key;
  std::vector<std::string> properties;
  std::string primary_key;
  std::string merge_engine;
  std::string version_column;
  std::vector<std::string> aggregates;
  std::string changelog_image;
  bool if_not_exists = false;
  bool json_output = false;
  // table alter
  std::string changes_json;
  std::vector<std::string> add_columns;
  std::vector<std::string> drop_columns;
  std::vector<std::string> renames;
  std::vector<std::string> widens;
  std::vector<std::string> make_optional;
  std::vector<std::string> docs;
  std::vector<std::string> remove_docs;
  std::vector<std::string> remove_properties;
};

// "name type" (the type is the rest of the text, spaces and all).
Result<std::pair<std::string, std::string>> NameAndType(const std::string& flag,
                                                        const std::string& text) {
  auto space = text.find(' ');
  if (space == std::string::npos || space == 0 || space + 1 == text.size()) {
    return Status::Invalid(flag + " '" + text + "' must be \"name type\", e.g. \"note string\"");
  }
  return std::make_pair(text.substr(0, space), text.substr(space + 1));
}

// A column path flag (point.z, `a.b`.c; docs/api.md#nested-fields) as alter_table's "name": a
// string for a top-level column, a list of names for a nested field.
Result<json> ColumnPathJson(const std::string& text) {
  if (text.find_first_of(".`") == std::string::npos) return json(text);
  ASSIGN_OR_RAISE(auto path, catalog::ParseColumnPath(text));
  if (path.size() == 1) return json(path[0]);
  return json(path);
}

// --property key=value pairs as a JSON object.
Result<json> PropertyPairs(const std::vector<std::string>& pairs) {
  json props = json::object();
  for (const auto& p : pairs) {
    auto eq = p.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status::Invalid("--property '" + p + "' must be key=value");
    }
    props[p.substr(0, eq)] = p.substr(eq + 1);
  }
  return props;
}

// The "changes" of an alter_table body: --changes first, then each kind of flag in turn.
Result<json> AlterChanges(const TableArgs& args) {
  json changes = json::array();
  if (!args.changes_json.empty()) {
    json given = json::parse(args.changes_json, nullptr, false);
    if (given.is_discarded() || !given.is_array()) {
      return Status::Invalid("--changes must be a JSON list of changes");
    }
    for (auto& c : given) changes.push_back(std::move(c));
  }
  for (const auto& a : args.add_columns) {
    ASSIGN_OR_RAISE(auto nt, NameAndType("--add-column", a));
    ASSIGN_OR_RAISE(json name, ColumnPathJson(nt.first));
    changes.push_back({{"op", "add_column"}, {"name", name}, {"type", nt.second}});
  }
  for (const auto& d : args.drop_columns) {
    ASSIGN_OR_RAISE(json name, ColumnPathJson(d));
    changes.push_back({{"op", "drop_column"}, {"name", name}});
  }
  for (const auto& r : args.renames) {
    auto eq = r.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == r.size()) {
      return Status::Invalid("--rename '" + r + "' must be old=new");
    }
    ASSIGN_OR_RAISE(json name, ColumnPathJson(r.substr(0, eq)));
    changes.push_back({{"op", "rename_column"}, {"name", name}, {"new_name", r.substr(eq + 1)}});
  }
  for (const auto& w : args.widens) {
    ASSIGN_OR_RAISE(auto nt, NameAndType("--widen", w));
    ASSIGN_OR_RAISE(json name, ColumnPathJson(nt.first));
    changes.push_back({{"op", "widen_type"}, {"name", name}, {"type", nt.second}});
  }
  for (const auto& m : args.make_optional) {
    ASSIGN_OR_RAISE(json name, ColumnPathJson(m));
    changes.push_back({{"op", "make_optional"}, {"name", name}});
  }
  for (const auto& d : args.docs) {
    auto eq = d.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status::Invalid("--doc '" + d + "' must be column=text");
    }
    changes.push_back(
        {{"op", "set_column_doc"}, {"name", d.substr(0, eq)}, {"doc", d.substr(eq + 1)}});
  }
  for (const auto& c : args.remove_docs) {
    changes.push_back({{"op", "set_column_doc"}, {"name", c}, {"doc", nullptr}});
  }
  ASSIGN_OR_RAISE(json props, PropertyPairs(args.properties));
  for (const auto& k : args.remove_properties) props[k] = nullptr;
  if (!props.empty()) changes.push_back({{"op", "set_properties"}, {"properties", props}});
  if (changes.empty()) return Status::Invalid("table alter needs at least one change");
  return changes;
}

// The "properties" of a create_table body: --property pairs plus what the primary-key flags
// mean (docs/api.md); a flag and a --property that set the same key are refused.
Result<json> TableProperties(const TableArgs& args) {
  ASSIGN_OR_RAISE(json props, PropertyPairs(args.properties));
  auto set = [&](const std::string& flag, const std::string& key,
                 const std::string& value) -> Status {
    if (props.contains(key)) {
      return Status::Invalid(flag + " and --property " + key + " both set '" + key + "'");
    }
    if (args.primary_key.empty()) {
      return Status::Invalid(flag + " needs --primary-key: only primary-key tables merge rows");
    }
    props[key] = value;
    return Status::OK();
  };
  if (!args.merge_engine.empty())
    RETURN_NOT_OK(set("--merge-engine", "merge_engine", args.merge_engine));
  if (!args.version_column.empty()) {
    if (args.merge_engine != "versioned") {
      return Status::Invalid("--version-column needs --merge-engine versioned");
    }
    RETURN_NOT_OK(set("--version-column", "merge_engine.version_column", args.version_column));
  }
  for (const auto& a : args.aggregates) {
    if (args.merge_engine != "aggregate") {
      return Status::Invalid("--agg needs --merge-engine aggregate");
    }
    auto eq = a.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == a.size()) {
      return Status::Invalid("--agg '" + a + "' must be column=function, e.g. total=sum");
    }
    RETURN_NOT_OK(set("--agg", "fields." + a.substr(0, eq) + ".agg", a.substr(eq + 1)));
  }
  if (!args.changelog_image.empty()) {
    RETURN_NOT_OK(set("--changelog-image", "changelog.image", args.changelog_image));
  }
  return props;
}

// `oxbow table create`.
void RegisterTableCreate(CLI::App* table, const std::shared_ptr<TableArgs>& args) {
  auto connect = [args]() { return Connect(args->server); };
  auto* create = table->add_subcommand("create", "Create a table");
  AddServerOption(create, &args->server);
  create->add_option("table", args->table, "namespace.table")->required();
  create
      ->add_option("--schema", args->schema,
                   "Fields, e.g. \"id int64 not null, name string, ts timestamp[us, tz=UTC]\"")
      ->required();
  create->add_option("--buckets", args->buckets, "Number of buckets")->capture_default_str();
  create->add_option("--bucket-key", args->bucket_key, "Columns hashed to pick a bucket (a,b)");
  create->add_option("--property", args->properties, "Table property key=value (repeatable)");
  create->add_option("--primary-key", args->primary_key,
                     "Primary-key columns (a,b): a primary-key table (upserts, deletes, lookups)");
  create->add_option("--merge-engine", args->merge_engine, "How a write merges with the stored row")
      ->check(CLI::IsMember({"last_row", "first_row", "versioned", "aggregate"}));
  create->add_option("--version-column", args->version_column,
                     "Integer or timestamp column; a lower version is ignored (versioned)");
  create
      ->add_option("--agg", args->aggregates,
                   "column=function, e.g. total=sum (aggregate; repeatable)")
      ->allow_extra_args(false);
  create
      ->add_option("--changelog-image", args->changelog_image,
                   "full: -U records carry the old row; none: no -U records")
      ->check(CLI::IsMember({"full", "none"}));
  create->add_flag("--if-not-exists", args->if_not_exists, "Succeed if the table exists");
  SetAction(create, [args, connect]() -> Status {
    ASSIGN_OR_RAISE(auto schema, ParseCompactSchema(args->schema));
    ASSIGN_OR_RAISE(json props, TableProperties(*args));
    json body = {
        {"table", args->table},     {"schema", json::parse(catalog::SchemaToJson(*schema))},
        {"buckets", args->buckets}, {"bucket_key", SplitList(args->bucket_key)},
        {"properties", props},      {"if_not_exists", args->if_not_exists}};
    if (!args->primary_key.empty()) body["primary_key"] = SplitList(args->primary_key);
    ASSIGN_OR_RAISE(auto c, connect());
    ASSIGN_OR_RAISE(json created, Action(*c, args->server.address, "create_table", body));
    std::cout << "created " << created.value("table", args->table) << " ("
              << created.value("buckets", 0) << " buckets";
    if (!args->primary_key.empty()) std::cout << ", primary key " << args->primary_key;
    std::cout << ")\n";
    return Status::OK();
  });
}

// `oxbow table alter`.
void RegisterTableAlter(CLI::App* table, const std::shared_ptr<TableArgs>& args) {
  auto connect = [args]() { return Connect(args->server); };
  auto* alter = table->add_subcommand(
      "alter", "Change a table's columns and properties, all at once or none (docs/api.md)");
  AddServerOption(alter, &args->server);
  alter->add_option("table", args->table, "namespace.table")->required();
  alter->add_option("--changes", args->changes_json,
                    "A JSON list of changes, as alter_table takes them (applied first)");
  alter->add_option("--add-column", args->add_columns,
                    "\"name type\": a nullable column at the end (repeatable); a name with "
                    "'.' is a nested field, point.z (`a.b` quotes a name holding '.')");
  alter->add_option("--drop-column", args->drop_columns,
                    "A column or nested field (point.z) to drop (repeatable)");
  alter->add_option("--rename", args->renames,
                    "old=new: rename a column or nested field (point.z=depth) (repeatable)");
  alter->add_option("--widen", args->widens,
                    "\"name type\": widen a column's type, e.g. \"n int64\" (repeatable)");
  alter->add_option("--make-optional", args->make_optional,
                    "A required column to make nullable (repeatable)");
  alter->add_option("--doc", args->docs, "column=text: set a column's doc (repeatable)");
  alter->add_option("--remove-doc", args->remove_docs, "A column whose doc to remove (repeatable)");
  alter->add_option("--property", args->properties, "Set table property key=value (repeatable)");
  alter->add_option("--remove-property", args->remove_properties,
                    "Remove a table property (repeatable)");
  SetAction(alter, [args, connect]() -> Status {
    ASSIGN_OR_RAISE(json changes, AlterChanges(*args));
    ASSIGN_OR_RAISE(auto c, connect());
    ASSIGN_OR_RAISE(json altered, Action(*c, args->server.address, "alter_table",
                                         {{"table", args->table}, {"changes", changes}}));
    std::cout << "altered " << altered.value("table", args->table) << " (schema version "
              << altered.value("schema_id", 0) << ")\n";
    return Status::OK();
  });
}

void RegisterTable(CLI::App& app) {
  auto args = std::make_shared<TableArgs>();
  auto* table = app.add_subcommand("table", "Create, list, describe and drop tables");
  table->require_subcommand(1);
  auto add_server = [&](CLI::App* cmd) { AddServerOption(cmd, &args->server); };
  auto connect = [args]() { return Connect(args->server); };

  RegisterTableCreate(table, args);

  auto* list = table->add_subcommand("list", "List tables");
  add_server(list);
  list->add_flag("--json", args->json_output, "Print the server's JSON");
  SetAction(list, [args, connect]() -> Status {
    ASSIGN_OR_RAISE(auto c, connect());
    ASSIGN_OR_RAISE(json tables, Action(*c, args->server.address, "list_tables", json::object()));
    if (args->json_output) {
      std::cout << tables.dump(2) << "\n";
      return Status::OK();
    }
    for (const auto& t : tables["tables"]) {
      std::cout << t["table"].get<std::string>() << "\t" << t["buckets"].get<int>() << " buckets\t"
                << t["schema"]["fields"].size() << " columns\n";
    }
    return Status::OK();
  });

  auto* describe = table->add_subcommand("describe", "Schema, buckets and offsets of a table");
  add_server(describe);
  describe->add_option("table", args->table, "namespace.table")->required();
  describe->add_flag("--json", args->json_output, "Print the server's JSON");
  SetAction(describe, [args, connect]() -> Status {
    ASSIGN_OR_RAISE(auto c, connect());
    ASSIGN_OR_RAISE(json d,
                    Action(*c, args->server.address, "describe_table", {{"table", args->table}}));
    if (args->json_output) {
      std::cout << d.dump(2) << "\n";
    } else {
      PrintDescribe(d);
    }
    return Status::OK();
  });

  RegisterTableAlter(table, args);
  auto* drop = table->add_subcommand("drop", "Drop a table and its data");
  add_server(drop);
  drop->add_option("table", args->table, "namespace.table")->required();
  SetAction(drop, [args, connect]() -> Status {
    ASSIGN_OR_RAISE(auto c, connect());
    RETURN_NOT_OK(
        Action(*c, args->server.address, "drop_table", {{"table", args->table}}).status());
    std::cout << "dropped " << args->table << "\n";
    return Status::OK();
  });
}

struct ProduceArgs {
  ServerArgs server;
  std::string table;
  std::string input = "-";
  std::string format;
  std::string columns;
  int64_t batch_rows = 65536;
  std::string compression = "none";
};

// The table's schema, or only `columns` of it (a partial update of a primary-key table).
Result<arrow::SchemaPtr> ProducedSchema(const arrow::SchemaPtr& table_schema,
                                        const std::string& columns) {
  if (columns.empty()) return table_schema;
  std::vector<int> indices;
  for (const auto& name : SplitList(columns)) {
    const int i = table_schema->GetFieldIndex(name);
    if (i < 0) {
      std::string valid;
      for (const auto& f : table_schema->fields()) valid += (valid.empty() ? "" : ", ") + f.name;
      return Status::Invalid("--columns: unknown column '" + name + "'; the columns are: " + valid);
    }
    indices.push_back(i);
  }
  return table_schema->Select(indices);
}

Status Produce(const ProduceArgs& args) {
  ASSIGN_OR_RAISE(auto c, Connect(args.server));
  ASSIGN_OR_RAISE(json describe,
                  Action(*c, args.server.address, "describe_table", {{"table", args.table}}));
  ASSIGN_OR_RAISE(auto table_schema, TableSchema(describe));
  ASSIGN_OR_RAISE(auto schema, ProducedSchema(table_schema, args.columns));
  ASSIGN_OR_RAISE(auto data, ReadInput(args.input));
  const std::string format = InputFormat(args.format, args.input, data->view());
  if (format == "arrow" && !args.columns.empty()) {
    return Status::Invalid(
        "--columns applies to CSV and JSON Lines; Arrow input sends its own "
        "columns");
  }
  text::ReadOptions options;
  options.batch_rows = args.batch_rows;
  ASSIGN_OR_RAISE(auto batches, ReadRows(format, data, schema, options));
  if (!batches.empty()) schema = batches[0]->schema();
  int64_t rows = 0;
  for (const auto& b : batches) rows += b->num_rows();

  ipc::WriteOptions write;
  ASSIGN_OR_RAISE(write.codec, arrow::ParseCodec(args.compression));
  ASSIGN_OR_RAISE(auto put, c->DoPut(args.table, schema, write));
  ASSIGN_OR_RAISE(int64_t acked, PutAll(*put, batches, args.server.address));
  if (describe.value("primary_key", json::array()).empty()) {
    std::cerr << "produced " << acked << " rows to " << args.table << "\n";
  } else {
    std::cerr << "upserted " << rows << " rows to " << args.table << " (" << acked
              << " changelog records)\n";
  }
  return Status::OK();
}

struct ConsumeArgs {
  ServerArgs server;
  std::string table;
  int bucket = -1;
  std::string from = "earliest";
  int64_t to = -1;
  std::string columns;
  bool follow = false;
  bool changelog = false;
  std::string format = "table";
  int64_t limit = -1;
};

Status Consume(const ConsumeArgs& args) {
  ASSIGN_OR_RAISE(auto c, Connect(args.server));
  ASSIGN_OR_RAISE(json describe,
                  Action(*c, args.server.address, "describe_table", {{"table", args.table}}));
  const int buckets = describe.value("buckets", 1);
  if (args.bucket >= buckets) {
    return Status::Invalid("--bucket " + std::to_string(args.bucket) + " does not exist: " +
                           args.table + " has " + std::to_string(buckets) + " buckets");
  }
  ASSIGN_OR_RAISE(auto format, text::ParseTextFormat(args.format));
  flight::Ticket request;
  request.table = args.table;
  request.follow = args.follow;
  if (args.to >= 0) request.to = args.to;
  if (!args.columns.empty()) request.columns = SplitList(args.columns);
  if (args.changelog) {
    if (describe.value("primary_key", json::array()).empty()) {
      return Status::Invalid("--changelog: " + args.table +
                             " is a log table; only primary-key tables have a changelog");
    }
    // The change type first, then the columns asked for (all by default).
    std::vector<std::string> columns = {std::string(kChangeTypeColumn)};
    if (!request.columns) {
      ASSIGN_OR_RAISE(auto schema, TableSchema(describe));
      request.columns.emplace();
      for (const auto& f : schema->fields()) request.columns->push_back(f.name);
    }
    for (const auto& name : *request.columns) {
      if (name != kChangeTypeColumn) columns.push_back(name);
    }
    request.columns = std::move(columns);
  }
  if (args.from == "earliest" || args.from == "latest") {
    request.from.kind = args.from == "earliest" ? flight::StartPosition::Kind::kEarliest
                                                : flight::StartPosition::Kind::kLatest;
  } else {
    auto offset = ParseInt64(args.from);
    if (!offset.ok()) {
      return Status::Invalid("--from must be earliest, latest or an offset, got " +
                             Quote(args.from));
    }
    request.from.offset = *offset;
    request.from.kind = flight::StartPosition::Kind::kOffset;
  }
  std::vector<int> targets;
  for (int b = 0; b < buckets; ++b) {
    if (args.bucket < 0 || args.bucket == b) targets.push_back(b);
  }

  std::mutex out_mu;
  std::unique_ptr<text::TextWriter> writer;
  std::atomic<int64_t> printed{0};
  std::vector<std::unique_ptr<client::GetStream>> streams;
  for (int b : targets) {
    request.bucket = b;
    auto stream = c->DoGet(flight::TicketToJson(request));
    if (!stream.ok()) return WithServer(stream.status(), args.server.address);
    streams.push_back(std::move(stream).ValueOrDie());
  }
  text::WriteOptions options;
  if (args.follow) options.table_page_rows = 1;  // print as rows arrive
  ASSIGN_OR_RAISE(writer, text::TextWriter::Make(format, streams[0]->schema(), options));

  auto drain = [&](client::GetStream& stream) -> Status {
    while (args.limit < 0 || printed < args.limit) {
      ASSIGN_OR_RAISE(auto chunk, stream.Next());
      if (!chunk) break;
      auto batch = chunk->batch;
      std::lock_guard<std::mutex> lock(out_mu);
      if (args.limit >= 0 && printed + batch->num_rows() > args.limit) {
        batch = batch->Slice(0, args.limit - printed);
      }
      std::string out;
      RETURN_NOT_OK(writer->Write(*batch, &out));
      printed += batch->num_rows();
      std::cout << out << std::flush;
    }
    return Status::OK();
  };
  Status status;
  if (streams.size() == 1) {
    status = drain(*streams[0]);
  } else {
    std::vector<std::thread> threads;
    std::vector<Status> results(streams.size());
    for (size_t i = 0; i < streams.size(); ++i) {
      threads.emplace_back([&, i] {
        results[i] = drain(*streams[i]);
        if (!results[i].ok() || (args.limit >= 0 && printed >= args.limit)) {
          for (auto& s : streams) s->Cancel();
        }
      });
    }
    for (auto& t : threads) t.join();
    for (const auto& r : results) {
      if (!r.ok() && status.ok()) status = r;
    }
  }
  std::string tail;
  RETURN_NOT_OK(writer->Finish(&tail));
  std::cout << tail << std::flush;
  return WithServer(status, args.server.address);
}

void PrintLake(const std::string& table, const json& lake) {
  if (!lake.value("enabled", false)) {
    std::cout << table << ": lake tiering is off (table property lake.enabled = false)\n";
    return;
  }
  const auto& location = lake["metadata_location"];
  std::cout << "table:      " << table << "\n";
  std::cout << "metadata:   " << (location.is_string() ? location.get<std::string>() : "(none yet)")
            << "\n";
  std::cout << "lag:        " << lake.value("lag_rows", int64_t{0}) << " rows, "
            << lake.value("lag_ms", int64_t{0}) << " ms\n";
  std::cout << "snapshots:  " << lake.value("snapshots", int64_t{0}) << "\n";
  std::cout << "data files: " << lake.value("data_files", int64_t{0}) << "\n";
  std::cout << "tiered:    ";
  const auto& tiered = lake["tiered_offsets"];
  for (size_t b = 0; b < tiered.size(); ++b) {
    std::cout << " bucket " << b << " < " << tiered[b].get<int64_t>()
              << (b + 1 < tiered.size() ? "," : "");
  }
  std::cout << "\n";
  if (lake.contains("error"))
    std::cout << "error:      " << lake["error"].get<std::string>() << "\n";
}

void RegisterLake(CLI::App& app) {
  struct LakeArgs {
    ServerArgs server;
    std::string table;
    bool json_output = false;
  };
  auto args = std::make_shared<LakeArgs>();
  auto* lake = app.add_subcommand("lake", "The Iceberg copy of tables");
  lake->require_subcommand(1);
  auto* status = lake->add_subcommand("status", "Metadata location, tiered offsets and lag");
  AddServerOption(status, &args->server);
  status->add_option("table", args->table, "namespace.table")->required();
  status->add_flag("--json", args->json_output, "Print the server's JSON");
  SetAction(status, [args]() -> Status {
    ASSIGN_OR_RAISE(auto c, Connect(args->server));
    ASSIGN_OR_RAISE(json d,
                    Action(*c, args->server.address, "describe_table", {{"table", args->table}}));
    if (!d.contains("lake")) return Status::NotImplemented("the server has no lake");
    if (args->json_output) {
      std::cout << d["lake"].dump(2) << "\n";
    } else {
      PrintLake(args->table, d["lake"]);
    }
    return Status::OK();
  });
}

void RegisterProduce(CLI::App& app) {
  auto args = std::make_shared<ProduceArgs>();
  auto* cmd = app.add_subcommand("produce", "Write rows from CSV, JSON Lines or Arrow IPC");
  AddServerOption(cmd, &args->server);
  cmd->add_option("table", args->table, "namespace.table")->required();
  cmd->add_option("input", args->input, "File to read, or - for standard input")
      ->capture_default_str();
  cmd->add_option("--format", args->format,
                  "arrow, csv or jsonl (default: from the name or bytes)");
  cmd->add_option("--columns", args->columns,
                  "Columns the CSV or JSON Lines rows hold (a,b): on a primary-key table, a "
                  "partial update");
  cmd->add_option("--batch-rows", args->batch_rows, "Rows per batch for CSV and JSON Lines")
      ->capture_default_str();
  cmd->add_option("--compression", args->compression, "none, lz4 or zstd")->capture_default_str();
  SetAction(cmd, [args]() { return Produce(*args); });
}

void RegisterConsume(CLI::App& app) {
  auto args = std::make_shared<ConsumeArgs>();
  auto* cmd = app.add_subcommand("consume", "Read rows of a table");
  AddServerOption(cmd, &args->server);
  cmd->add_option("table", args->table, "namespace.table")->required();
  cmd->add_option("--bucket", args->bucket, "Only this bucket (default: all)");
  cmd->add_option("--from", args->from, "earliest, latest or an offset")->capture_default_str();
  cmd->add_option("--to", args->to, "Stop before this offset");
  cmd->add_option("--columns", args->columns, "Columns to read (a,b)");
  cmd->add_flag("--follow", args->follow, "Keep reading new rows until interrupted");
  cmd->add_flag("--changelog", args->changelog,
                "Primary-key table: print each change's type (+I, -U, +U, -D) first");
  cmd->add_option("--format", args->format, "table, jsonl or csv")->capture_default_str();
  cmd->add_option("--limit", args->limit, "Stop after this many rows");
  SetAction(cmd, [args]() { return Consume(*args); });
}

}  // namespace

void RegisterServerCommands(CLI::App& app) {
  RegisterTable(app);
  RegisterProduce(app);
  RegisterConsume(app);
  RegisterLake(app);
}

}  // namespace oxbow::cli
