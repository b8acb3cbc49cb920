#include "oxbow/cli/server_support.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "oxbow/arrow/ipc.h"
#include "oxbow/catalog/descriptor.h"
#include "oxbow/common/file_system.h"

namespace oxbow::cli {
namespace {

namespace ipc = arrow::ipc;
using nlohmann::json;

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Progress on stderr, only when it is a terminal.
class Progress {
 public:
  explicit Progress(int64_t total_rows) : total_(total_rows), tty_(::isatty(STDERR_FILENO)) {}
  void Update(int64_t rows, int64_t bytes, bool final = false) {
    if (!tty_) return;
    auto now = std::chrono::steady_clock::now();
    if (!final && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    const double secs = std::chrono::duration<double>(now - start_).count();
    const double mbps = secs > 0 ? bytes / secs / 1e6 : 0;
    std::string bar;
    if (total_ > 0) {
      const int filled = static_cast<int>(30 * std::min(rows, total_) / total_);
      bar = "[" + std::string(filled, '#') + std::string(30 - filled, ' ') + "] " +
            std::to_string(100 * std::min(rows, total_) / total_) + "% ";
    }
    std::fprintf(stderr, "\r%s%lld rows acked, %.1f MB/s%s", bar.c_str(),
                 static_cast<long long>(rows), mbps, final ? "\n" : "");
  }

 private:
  int64_t total_;
  bool tty_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace

std::string DefaultServer() {
  const char* env = std::getenv("OXBOW_SERVER");
  return env != nullptr && *env != '\0' ? env : "127.0.0.1:8815";
}

void AddServerOption(CLI::App* command, ServerArgs* server) {
  command
      ->add_option("--server", server->address,
                   "oxbowd address; grpc+tls://host:port for TLS (env OXBOW_SERVER)")
      ->capture_default_str();
  command
      ->add_option("--tls-ca", server->tls_ca,
                   "PEM file of the CAs the server's TLS "
                   "certificate must chain to (default: the "
                   "system's)")
      ->envname("OXBOW_TLS_CA");
  command->add_option("--tls-cert", server->tls_cert, "PEM client certificate (mutual TLS)")
      ->envname("OXBOW_TLS_CERT");
  command->add_option("--tls-key", server->tls_key, "PEM key of --tls-cert")
      ->envname("OXBOW_TLS_KEY");
  command
      ->add_option("--user", server->user,
                   "Log in as this user (oxbowd --auth); the password comes from OXBOW_PASSWORD")
      ->envname("OXBOW_USER");
}

Result<std::unique_ptr<client::Client>> Connect(const ServerArgs& server) {
  auto fs = PosixFileSystem::Default();
  client::ConnectOptions options;
  for (auto [path, pem] : {std::pair{&server.tls_ca, &options.tls_root_certs},
                           std::pair{&server.tls_cert, &options.tls_cert_chain},
                           std::pair{&server.tls_key, &options.tls_private_key}}) {
    if (path->empty()) continue;
    auto bytes = ReadWholeFile(*fs, *path);
    if (!bytes.ok()) return bytes.status().WithContext("reading " + *path);
    *pem = std::string((*bytes)->view());
  }
  ASSIGN_OR_RAISE(auto c, client::Client::Connect(server.address, options));
  if (!server.user.empty()) {
    const char* password = std::getenv("OXBOW_PASSWORD");
    if (password == nullptr) {
      return Status::Invalid("--user " + server.user +
                             " needs the password in OXBOW_PASSWORD (kept out of the shell "
                             "history and the process list)");
    }
    Status st = c->Login(server.user, password);
    if (!st.ok()) return WithServer(st, server.address).WithContext("login");
  }
  return c;
}

std::vector<std::string> SplitList(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    std::string item = text.substr(start, comma - start);
    if (!item.empty()) out.push_back(item);
    start = comma + 1;
  }
  return out;
}

Status WithServer(const Status& st, const std::string& server) {
  if (st.ok() || (st.code() != StatusCode::kIOError && st.code() != StatusCode::kUnavailable)) {
    return st;
  }
  return st.WithContext("server " + server);
}

Result<json> Action(client::Client& c, const std::string& server, const std::string& type,
                    const json& body) {
  auto result = c.DoAction(type, body.dump());
  if (!result.ok()) return WithServer(result.status(), server);
  json j = json::parse(*result, nullptr, false);
  if (j.is_discarded()) return Status::Invalid("server sent a non-JSON result for " + type);
  return j;
}

Result<arrow::SchemaPtr> TableSchema(const json& describe) {
  return catalog::SchemaFromJson(describe["schema"].dump());
}

std::string InputFormat(const std::string& named, const std::string& path, std::string_view data) {
  if (!named.empty()) return named;
  for (const char* ext : {".arrow", ".arrows", ".ipc", ".feather"}) {
    if (EndsWith(path, ext)) return "arrow";
  }
  if (EndsWith(path, ".csv")) return "csv";
  if (EndsWith(path, ".jsonl") || EndsWith(path, ".ndjson") || EndsWith(path, ".json")) {
    return "jsonl";
  }
  if (ipc::IsFileFormat(data) || (data.size() >= 4 && data.substr(0, 4) == "\xff\xff\xff\xff")) {
    return "arrow";
  }
  size_t i = data.find_first_not_of(" \t\r\n");
  return i != std::string_view::npos && data[i] == '{' ? "jsonl" : "csv";
}

Result<std::vector<arrow::RecordBatchPtr>> ReadRows(const std::string& format,
                                                    std::shared_ptr<Buffer> data,
                                                    const arrow::SchemaPtr& schema,
                                                    const text::ReadOptions& options) {
  if (format == "arrow") {
    ASSIGN_OR_RAISE(auto table, ipc::ReadAll(std::move(data)));
    return std::move(table.batches);
  }
  if (format != "csv" && format != "jsonl") {
    return Status::Invalid("--format must be arrow, csv or jsonl, got '" + format + "'");
  }
  ASSIGN_OR_RAISE(auto reader,
                  text::TextReader::Make(
                      format == "csv" ? text::TextFormat::kCsv : text::TextFormat::kJsonLines,
                      data->view(), schema, options));
  return reader->ReadAll();
}

Result<int64_t> PutAll(client::PutStream& put, const std::vector<arrow::RecordBatchPtr>& batches,
                       const std::string& server) {
  int64_t total_rows = 0;
  for (const auto& b : batches) total_rows += b->num_rows();
  Progress progress(total_rows);
  std::atomic<int64_t> acked_rows{0};
  std::atomic<int64_t> sent_bytes{0};
  Status ack_status;
  std::thread acks([&] {
    while (true) {
      auto ack = put.ReadAck();
      if (!ack.ok()) {
        ack_status = ack.status();
        return;
      }
      if (!ack->has_value()) return;
      json j = json::parse(**ack, nullptr, false);
      if (!j.is_discarded() && j.contains("offsets")) {
        for (const auto& o : j["offsets"]) acked_rows += o.value("rows", int64_t{0});
      }
      progress.Update(acked_rows, sent_bytes);
    }
  });
  Status send_status;
  for (const auto& b : batches) {
    send_status = put.Send(*b);
    if (!send_status.ok()) break;
    int64_t bytes = 0;
    for (const auto& col : b->columns()) {
      for (const auto& buf : col.data()->buffers) bytes += buf ? buf->size() : 0;
    }
    sent_bytes += bytes;
  }
  (void)put.DoneWriting();
  acks.join();
  RETURN_NOT_OK(WithServer(put.Finish(), server));
  RETURN_NOT_OK(ack_status);
  RETURN_NOT_OK(send_status);
  progress.Update(acked_rows, sent_bytes, /*final=*/true);
  return acked_rows.load();
}

}  // namespace oxbow::cli
