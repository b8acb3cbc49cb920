// S3FileSystem: Amazon S3 (or any S3-compatible store) behind the FileSystem seam, so the lake's
// Parquet data, Avro manifests and Iceberg metadata can live in a bucket. docs/storage.md gives
// the layout, the configuration and where S3 differs from a POSIX file system.
//
// Paths are URIs, "s3://bucket/key". Objects are immutable once written: a File opened with
// kCreate buffers its bytes (uploading full parts of a multipart upload as it goes, several at
// once) and the object appears whole when Sync() returns; a File destroyed unsynced leaves no
// object. S3 has no rename, no lock and no directories: Rename* and LockFile are NotImplemented,
// CreateDirs and SyncDir do nothing, and a "directory" is the prefix "<key>/".
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "oxbow/common/file_system.h"

namespace oxbow::storage {

struct S3Options {
  // Base URL of the service, e.g. "http://127.0.0.1:9000". Default (empty): AWS itself,
  // https://s3.<region>.amazonaws.com.
  std::string endpoint;
  // Region that requests are signed for. Default: "us-east-1".
  std::string region = "us-east-1";
  std::string access_key_id;      // required
  std::string secret_access_key;  // required; never logged
  std::string session_token;      // optional (temporary credentials); never logged
  // Path-style URLs (<endpoint>/<bucket>/<key>) instead of virtual-host ones
  // (<bucket>.<host>/<key>). Default: false (FromEnvironment sets it when an endpoint is given).
  bool path_style = false;
  // Attempts per request; 5xx answers, throttling and network errors are retried with
  // exponential backoff (with jitter) from initial_backoff_ms up to max_backoff_ms.
  // Defaults: 5, 100 ms, 5 s.
  int max_attempts = 5;
  int64_t initial_backoff_ms = 100;
  int64_t max_backoff_ms = 5000;
  // Connection set-up limit, and the longest a transfer may stall. Defaults: 5 s, 30 s.
  int64_t connect_timeout_ms = 5000;
  int64_t stall_timeout_ms = 30000;
  // Objects larger than this are written with a multipart upload in parts of this size; at
  // least 5 MiB (S3's smallest part). Default: 8 MiB.
  int64_t part_bytes = int64_t{8} << 20;
  // Parts of one multipart upload sent at once, each on its own thread (at least 1). A File being
  // written then holds up to this many parts in flight besides the (less than two) parts it is
  // filling. Default: 4.
  int upload_parts_in_flight = 4;
  // Buffers of ranged GETs of 1 MiB or more are recycled (no fresh pages to fault in and zero
  // for each read, e.g. each cold-log fetch): at most this many bytes of them are kept while
  // unused. Default: 32 MiB.
  int64_t read_buffer_pool_bytes = int64_t{32} << 20;
  // Keys asked for per LIST page (S3 sends at most 1000). Default: 1000.
  int list_page_keys = 1000;
};

// Options from the standard AWS environment: AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL (then
// path-style), AWS_REGION or AWS_DEFAULT_REGION, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
// AWS_SESSION_TOKEN, else the profile AWS_PROFILE (default "default") of the credentials file
// AWS_SHARED_CREDENTIALS_FILE (default ~/.aws/credentials). Missing credentials are left empty.
S3Options S3OptionsFromEnvironment();

// Whether `path` is an "s3://" URI.
bool IsS3Uri(std::string_view path);

class S3Client;

class S3FileSystem : public FileSystem {
 public:
  // Checks the options (no request is sent).
  static Result<std::shared_ptr<S3FileSystem>> Make(S3Options options);
  ~S3FileSystem() override;

  // Lists at most one key under `uri` ("s3://bucket/prefix"): fails with a clear error when the
  // bucket is missing, the endpoint unreachable or the credentials refused.
  Status CheckAccess(const std::string& uri);

  const S3Options& options() const { return options_; }

  // No directories in S3: nothing to do.
  Status CreateDirs(const std::string& path) override;
  // Names below the prefix "<key>/" up to the next '/'; NotFound when nothing is below it.
  Result<std::vector<std::string>> ListDir(const std::string& path) override;
  // kRead (a HEAD finds the size; reads are ranged GETs) or kCreate (see above); kWrite is
  // NotImplemented: objects cannot be changed in place.
  Result<std::unique_ptr<File>> OpenFile(const std::string& path, FileMode mode) override;
  // An acknowledged PUT is durable: nothing to do.
  Status SyncDir(const std::string& path) override;
  Status Rename(const std::string& from, const std::string& to) override;
  Status RenameNoReplace(const std::string& from, const std::string& to) override;
  // DELETE (S3 answers success for a missing key too).
  Status Remove(const std::string& path) override;
  // Deletes the object `path` and every object under "<path>/".
  Status RemoveAll(const std::string& path) override;
  Result<std::vector<std::string>> ListFilesRecursively(const std::string& path) override;
  Result<std::unique_ptr<FileLock>> LockFile(const std::string& path) override;
  Result<int64_t> FileSize(const std::string& path) override;
  // A bucket has no quota here: the largest int64.
  Result<int64_t> FreeSpace(const std::string& path) override;

 private:
  explicit S3FileSystem(S3Options options);

  S3Options options_;
  std::unique_ptr<S3Client> client_;
};

}  // namespace oxbow::storage
