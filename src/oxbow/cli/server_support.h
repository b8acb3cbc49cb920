// What the commands that talk to oxbowd share (internal to the cli module).
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "oxbow/arrow/record_batch.h"
#include "oxbow/client/client.h"
#include "oxbow/common/status.h"
#include "oxbow/text/text.h"

namespace oxbow::cli {

// The env OXBOW_SERVER, else 127.0.0.1:8815.
std::string DefaultServer();

// Where oxbowd is and how to get in (docs/cli.md, "Secured servers").
struct ServerArgs {
  std::string address = DefaultServer();  // host:port, grpc://, grpc+tls://
  std::string tls_ca;                     // PEM file of the CAs to trust (grpc+tls)
  std::string tls_cert;                   // PEM client certificate and key (mutual TLS)
  std::string tls_key;
  std::string user;  // log in as this user; the password comes from OXBOW_PASSWORD
};

// Adds --server, --tls-ca, --tls-cert, --tls-key and --user (each with an OXBOW_ variable).
void AddServerOption(CLI::App* command, ServerArgs* server);

// A client of the server, logged in when a user is named.
Result<std::unique_ptr<client::Client>> Connect(const ServerArgs& server);

// "a,b" -> {"a", "b"} (empty items dropped).
std::vector<std::string> SplitList(const std::string& text);

// Server errors are reported with the server's address, so connection problems are obvious.
Status WithServer(const Status& st, const std::string& server);

// Runs an action and parses its JSON result.
Result<nlohmann::json> Action(client::Client& c, const std::string& server, const std::string& type,
                              const nlohmann::json& body);

// The table's schema in a describe_table result.
Result<arrow::SchemaPtr> TableSchema(const nlohmann::json& describe);

// "arrow", "csv" or "jsonl": named, or from the file name, or sniffed from the bytes.
std::string InputFormat(const std::string& named, const std::string& path, std::string_view data);

// The rows of an input file as batches: CSV and JSON Lines parsed against `schema`, an Arrow
// IPC stream or file as it is.
Result<std::vector<arrow::RecordBatchPtr>> ReadRows(const std::string& format,
                                                    std::shared_ptr<Buffer> data,
                                                    const arrow::SchemaPtr& schema,
                                                    const text::ReadOptions& options);

// Sends `batches` on `put` and waits for every acknowledgement; returns the rows the server
// acknowledged (the "rows" of every ack's offsets). On a terminal, shows progress on stderr.
Result<int64_t> PutAll(client::PutStream& put, const std::vector<arrow::RecordBatchPtr>& batches,
                       const std::string& server);

}  // namespace oxbow::cli
