// Test and benchmark driver of S3FileSystem (not installed): tests/s3 checks it against boto3
// and bench/s3_bench.py times it beside boto3. Options come from the AWS environment.
//   s3_tool put URI LOCAL_FILE          write LOCAL_FILE as the object URI (1 MiB writes)
//   s3_tool put-unsynced URI LOCAL_FILE the same writes, then the File is dropped without Sync()
//   s3_tool get URI OFFSET LENGTH       ranged read to stdout
//   s3_tool cat URI                     the whole object to stdout
//   s3_tool size URI | rm URI | rmr URI | check URI
//   s3_tool ls URI | lsr URI            names below a prefix / every object below it
//   s3_tool bench-put URI BYTES COUNT   COUNT objects of BYTES; prints MB/s
//   s3_tool bench-get URI RANGE COUNT   COUNT ranged reads of RANGE bytes spread over URI
// Environment knobs: OXBOW_S3_PART_BYTES, OXBOW_S3_PARTS_IN_FLIGHT, OXBOW_S3_LIST_PAGE_KEYS,
// OXBOW_S3_MAX_ATTEMPTS, OXBOW_S3_PATH_STYLE (0: virtual-host addressing).
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "oxbow/common/file_system.h"
#include "oxbow/storage/s3.h"

namespace {

using oxbow::ByteSpan;
using oxbow::FileMode;
using oxbow::Status;

int Fail(const Status& st) {
  std::fprintf(stderr, "s3_tool: %s\n", st.ToString().c_str());
  return 1;
}

double Seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

int64_t EnvInt(const char* name, int64_t fallback) {
  const char* value = std::getenv(name);
  return value ? std::atoll(value) : fallback;
}

int Run(const std::vector<std::string>& args) {
  if (args.size() < 2) {
    std::fprintf(stderr, "usage: s3_tool COMMAND URI ...\n");
    return 2;
  }
  oxbow::storage::S3Options options = oxbow::storage::S3OptionsFromEnvironment();
  options.part_bytes = EnvInt("OXBOW_S3_PART_BYTES", options.part_bytes);
  options.upload_parts_in_flight =
      static_cast<int>(EnvInt("OXBOW_S3_PARTS_IN_FLIGHT", options.upload_parts_in_flight));
  options.list_page_keys = static_cast<int>(EnvInt("OXBOW_S3_LIST_PAGE_KEYS", 1000));
  options.max_attempts = static_cast<int>(EnvInt("OXBOW_S3_MAX_ATTEMPTS", options.max_attempts));
  options.path_style = EnvInt("OXBOW_S3_PATH_STYLE", options.path_style ? 1 : 0) != 0;
  auto made = oxbow::storage::S3FileSystem::Make(options);
  if (!made.ok()) return Fail(made.status());
  oxbow::storage::S3FileSystem& fs = **made;
  const std::string& command = args[0];
  const std::string& uri = args[1];
  if ((command == "put" || command == "put-unsynced") && args.size() == 3) {
    std::ifstream in(args[2], std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    const std::string data = bytes.str();
    auto file = fs.OpenFile(uri, FileMode::kCreate);
    if (!file.ok()) return Fail(file.status());
    for (size_t at = 0; at < data.size(); at += 1 << 20) {
      std::string_view piece = std::string_view(data).substr(at, 1 << 20);
      Status st =
          (*file)->WriteAt(static_cast<int64_t>(at),
                           ByteSpan(reinterpret_cast<const uint8_t*>(piece.data()), piece.size()));
      if (!st.ok()) return Fail(st);
    }
    if (command == "put-unsynced") return 0;  // the File is dropped without Sync()
    Status st = (*file)->Sync();
    return st.ok() ? 0 : Fail(st);
  }
  if (command == "get" && args.size() == 4) {
    auto file = fs.OpenFile(uri, FileMode::kRead);
    if (!file.ok()) return Fail(file.status());
    auto buffer = (*file)->ReadAt(std::atoll(args[2].c_str()), std::atoll(args[3].c_str()));
    if (!buffer.ok()) return Fail(buffer.status());
    std::cout << (*buffer)->view();
    return 0;
  }
  if (command == "cat") {
    auto buffer = oxbow::ReadWholeFile(fs, uri);
    if (!buffer.ok()) return Fail(buffer.status());
    std::cout << (*buffer)->view();
    return 0;
  }
  if (command == "size") {
    auto size = fs.FileSize(uri);
    if (!size.ok()) return Fail(size.status());
    std::cout << *size << "\n";
    return 0;
  }
  if (command == "rm") {
    Status st = fs.Remove(uri);
    return st.ok() ? 0 : Fail(st);
  }
  if (command == "rmr") {
    Status st = fs.RemoveAll(uri);
    return st.ok() ? 0 : Fail(st);
  }
  if (command == "check") {
    Status st = fs.CheckAccess(uri);
    return st.ok() ? 0 : Fail(st);
  }
  if (command == "ls" || command == "lsr") {
    auto names = command == "ls" ? fs.ListDir(uri) : fs.ListFilesRecursively(uri);
    if (!names.ok()) return Fail(names.status());
    for (const auto& name : *names) std::cout << name << "\n";
    return 0;
  }
  if (command == "bench-put" && args.size() == 4) {
    const int64_t bytes = std::atoll(args[2].c_str());
    const int count = std::atoi(args[3].c_str());
    std::string data(static_cast<size_t>(bytes), '\0');
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>((i * 131) >> 7);
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < count; ++i) {
      auto file = fs.OpenFile(uri + "/" + std::to_string(i), FileMode::kCreate);
      if (!file.ok()) return Fail(file.status());
      for (int64_t at = 0; at < bytes; at += 1 << 20) {
        const int64_t n = std::min<int64_t>(1 << 20, bytes - at);
        Status st =
            (*file)->WriteAt(at, ByteSpan(reinterpret_cast<const uint8_t*>(data.data()) + at, n));
        if (!st.ok()) return Fail(st);
      }
      Status st = (*file)->Sync();
      if (!st.ok()) return Fail(st);
    }
    const double s = Seconds(start);
    std::printf("bench-put %d x %lld bytes: %.3f s, %.1f MB/s\n", count,
                static_cast<long long>(bytes), s, count * bytes / s / 1e6);
    return 0;
  }
  if (command == "bench-get" && args.size() == 4) {
    const int64_t range = std::atoll(args[2].c_str());
    const int count = std::atoi(args[3].c_str());
    auto file = fs.OpenFile(uri, FileMode::kRead);
    if (!file.ok()) return Fail(file.status());
    auto size = (*file)->Size();
    if (!size.ok()) return Fail(size.status());
    const int64_t slots = std::max<int64_t>(1, *size / range);
    auto start = std::chrono::steady_clock::now();
    int64_t total = 0;
    for (int i = 0; i < count; ++i) {
      auto buffer = (*file)->ReadAt((i * 7919 % slots) * range, range);
      if (!buffer.ok()) return Fail(buffer.status());
      total += (*buffer)->size();
    }
    const double s = Seconds(start);
    std::printf("bench-get %d x %lld bytes: %.3f s, %.1f MB/s\n", count,
                static_cast<long long>(range), s, total / s / 1e6);
    return 0;
  }
  std::fprintf(stderr, "s3_tool: unknown command or arguments: %s\n", command.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  spdlog::set_default_logger(spdlog::stderr_color_mt("s3_tool"));  // stdout carries the data
  return Run(std::vector<std::string>(argv + 1, argv + argc));
}
