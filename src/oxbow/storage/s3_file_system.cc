#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <future>
#include <limits>
#include <sstream>

#include "oxbow/storage/s3_internal.h"

namespace oxbow::storage {

namespace {

std::string Uri(const std::string& bucket, const std::string& key) {
  return "s3://" + bucket + "/" + key;
}

// The prefix of the objects "below" a directory key.
std::string DirPrefix(const std::string& key) { return key.empty() ? key : key + "/"; }

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

// An object read with ranged GETs; its size is found once, at open.
class S3ReadFile : public File {
 public:
  S3ReadFile(std::string path, S3Client* client, S3Location location, int64_t size)
      : File(std::move(path)), client_(client), location_(std::move(location)), size_(size) {}

  Status WriteAt(int64_t, std::span<const ByteSpan>) override {
    return Status::NotImplemented(path() + ": opened for reading");
  }
  Result<std::shared_ptr<Buffer>> ReadAt(int64_t position, int64_t length) override {
    if (position < 0 || length < 0) return Status::Invalid(path() + ": negative read range");
    length = std::max<int64_t>(0, std::min(length, size_ - position));
    if (length == 0) return Buffer::Empty();
    ASSIGN_OR_RAISE(auto bytes, client_->Get(location_.bucket, location_.key, position, length));
    if (bytes->size() != length) {
      return Status::IOError("short read of " + path() + ": " + std::to_string(bytes->size()) +
                             " of " + std::to_string(length) + " bytes at " +
                             std::to_string(position) + " (the object changed?)");
    }
    return bytes;
  }
  Status Sync() override { return Status::OK(); }
  Status Truncate(int64_t) override {
    return Status::NotImplemented(path() + ": opened for reading");
  }
  Result<int64_t> Size() override { return size_; }

 private:
  S3Client* client_;
  S3Location location_;
  int64_t size_;
};

// An object being written: bytes are buffered, full parts go out as a multipart upload once the
// buffer holds more than one part, up to parts_in_flight of them at once (each on its own
// thread), and Sync() completes the object.
class S3WriteFile : public File {
 public:
  S3WriteFile(std::string path, S3Client* client, S3Location location, int64_t part_bytes,
              int parts_in_flight)
      : File(std::move(path)),
        client_(client),
        location_(std::move(location)),
        part_bytes_(part_bytes),
        parts_in_flight_(static_cast<size_t>(std::max(1, parts_in_flight))) {}

  // An object never synced is never created: its multipart upload, if any, is aborted.
  ~S3WriteFile() override {
    std::lock_guard<std::mutex> lock(mu_);
    if (state_ == State::kOpen) FailLocked();
  }

  Status WriteAt(int64_t position, std::span<const ByteSpan> pieces) override {
    std::lock_guard<std::mutex> lock(mu_);
    RETURN_NOT_OK(CheckOpen());
    if (position < uploaded_) {
      return Status::NotImplemented(path() +
                                    ": S3 objects are written front to back; cannot "
                                    "write at " +
                                    std::to_string(position) + " after " +
                                    std::to_string(uploaded_) + " bytes went out");
    }
    size_t at = static_cast<size_t>(position - uploaded_);
    for (const auto& piece : pieces) {
      if (buffer_.size() < at) buffer_.resize(at);  // a gap reads as zeros
      // Bytes over buffered ones overwrite them; the rest are appended (no zero-fill first).
      const size_t overwritten = std::min(piece.size(), buffer_.size() - at);
      std::memcpy(buffer_.data() + at, piece.data(), overwritten);
      buffer_.append(reinterpret_cast<const char*>(piece.data()) + overwritten,
                     piece.size() - overwritten);
      at += piece.size();
    }
    // Keep one part in hand so a later write just behind the end still lands in the buffer.
    while (static_cast<int64_t>(buffer_.size()) >= 2 * part_bytes_) {
      Status st = StartPartLocked(static_cast<size_t>(part_bytes_));
      if (!st.ok()) {
        FailLocked();
        return st;
      }
    }
    return Status::OK();
  }

  Result<std::shared_ptr<Buffer>> ReadAt(int64_t position, int64_t length) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (position < uploaded_) {
      return Status::NotImplemented(path() + ": cannot read back bytes already uploaded");
    }
    const int64_t end = uploaded_ + static_cast<int64_t>(buffer_.size());
    length = std::max<int64_t>(0, std::min(length, end - position));
    return Buffer::CopyFrom(std::string_view(buffer_).substr(position - uploaded_, length));
  }

  Status Sync() override {
    std::lock_guard<std::mutex> lock(mu_);
    if (state_ == State::kDone) return Status::OK();
    RETURN_NOT_OK(CheckOpen());
    return FinishLocked();
  }

  Status Truncate(int64_t size) override {
    std::lock_guard<std::mutex> lock(mu_);
    RETURN_NOT_OK(CheckOpen());
    if (size < uploaded_) {
      return Status::NotImplemented(path() + ": cannot truncate below the bytes already uploaded");
    }
    buffer_.resize(static_cast<size_t>(size - uploaded_));
    return Status::OK();
  }

  Result<int64_t> Size() override {
    std::lock_guard<std::mutex> lock(mu_);
    return uploaded_ + static_cast<int64_t>(buffer_.size());
  }

 private:
  enum class State { kOpen, kDone, kFailed };

  Status CheckOpen() const {
    if (state_ == State::kDone) {
      return Status::NotImplemented(path() + ": the object is written; S3 objects are immutable");
    }
    if (state_ == State::kFailed) {
      return Status::IOError(path() + ": an earlier upload of this object failed");
    }
    return Status::OK();
  }

  // Sends the first `n` buffered bytes as the next part, on a thread of its own, once fewer than
  // parts_in_flight_ parts are out (waiting for the oldest first). They count as uploaded.
  Status StartPartLocked(size_t n) {
    if (upload_id_.empty()) {
      ASSIGN_OR_RAISE(upload_id_, client_->CreateMultipartUpload(location_.bucket, location_.key));
    }
    while (in_flight_.size() >= parts_in_flight_) RETURN_NOT_OK(FinishOldestPartLocked());
    std::string bytes;
    if (n == buffer_.size()) {
      bytes = std::move(buffer_);
      buffer_.clear();
    } else {
      bytes = buffer_.substr(0, n);
      buffer_.erase(0, n);
    }
    const int number = static_cast<int>(etags_.size()) + 1;
    etags_.emplace_back();
    uploaded_ += static_cast<int64_t>(bytes.size());
    in_flight_.push_back(
        {number,
         std::async(std::launch::async, [client = client_, location = location_,
                                         upload_id = upload_id_, number, bytes = std::move(bytes)] {
           return client->UploadPart(location.bucket, location.key, upload_id, number, bytes);
         })});
    return Status::OK();
  }

  // Waits for the oldest part in flight and records its ETag.
  Status FinishOldestPartLocked() {
    PartInFlight part = std::move(in_flight_.front());
    in_flight_.pop_front();
    ASSIGN_OR_RAISE(etags_[part.number - 1], part.etag.get());
    return Status::OK();
  }

  // Completes the object: one PUT, or the last part and CompleteMultipartUpload once every part
  // is in.
  Status FinishLocked() {
    Status st;
    if (upload_id_.empty()) {
      st = client_->Put(location_.bucket, location_.key, buffer_);
    } else {
      // The last part, whatever its size.
      if (!buffer_.empty()) st = StartPartLocked(buffer_.size());
      while (st.ok() && !in_flight_.empty()) st = FinishOldestPartLocked();
      if (st.ok()) {
        st = client_->CompleteMultipartUpload(location_.bucket, location_.key, upload_id_, etags_);
      }
    }
    if (!st.ok()) {
      FailLocked();
      return st;
    }
    state_ = State::kDone;
    buffer_.clear();
    buffer_.shrink_to_fit();
    return Status::OK();
  }

  // Gives up on the object: once no part is in flight, an unfinished multipart upload is
  // aborted, so no part of it is ever visible (a bucket lifecycle rule cleans up uploads whose
  // abort was lost too).
  void FailLocked() {
    state_ = State::kFailed;
    buffer_.clear();
    buffer_.shrink_to_fit();
    for (PartInFlight& part : in_flight_) part.etag.wait();
    in_flight_.clear();
    if (!upload_id_.empty()) {
      Status st = client_->AbortMultipartUpload(location_.bucket, location_.key, upload_id_);
      if (!st.ok()) spdlog::warn("S3: cannot abort the upload of {}: {}", path(), st.message());
    }
  }

  struct PartInFlight {
    int number = 0;
    std::future<Result<std::string>> etag;
  };

  S3Client* client_;
  S3Location location_;
  const int64_t part_bytes_;
  const size_t parts_in_flight_;
  std::mutex mu_;
  State state_ = State::kOpen;
  std::string buffer_;                  // bytes from offset uploaded_ on
  int64_t uploaded_ = 0;                // bytes handed to parts (sent or in flight)
  std::string upload_id_;               // of the multipart upload, once started
  std::vector<std::string> etags_;      // of each part started, by part number - 1
  std::deque<PartInFlight> in_flight_;  // oldest first
};

}  // namespace

S3Options S3OptionsFromEnvironment() {
  S3Options options;
  options.endpoint = Env("AWS_ENDPOINT_URL_S3");
  if (options.endpoint.empty()) options.endpoint = Env("AWS_ENDPOINT_URL");
  options.path_style = !options.endpoint.empty();
  std::string region = Env("AWS_REGION");
  if (region.empty()) region = Env("AWS_DEFAULT_REGION");
  if (!region.empty()) options.region = region;
  options.access_key_id = Env("AWS_ACCESS_KEY_ID");
  options.secret_access_key = Env("AWS_SECRET_ACCESS_KEY");
  options.session_token = Env("AWS_SESSION_TOKEN");
  if (options.access_key_id.empty() && options.secret_access_key.empty()) {
    std::string file = Env("AWS_SHARED_CREDENTIALS_FILE");
    if (file.empty() && !Env("HOME").empty()) file = Env("HOME") + "/.aws/credentials";
    std::string profile = Env("AWS_PROFILE");
    if (profile.empty()) profile = "default";
    std::ifstream in(file);
    if (in) {
      std::stringstream text;
      text << in.rdbuf();
      if (auto credentials = ParseCredentialsFile(text.str(), profile)) {
        options.access_key_id = credentials->access_key_id;
        options.secret_access_key = credentials->secret_access_key;
        options.session_token = credentials->session_token;
      }
    }
  }
  return options;
}

S3FileSystem::S3FileSystem(S3Options options)
    : options_(std::move(options)), client_(std::make_unique<S3Client>(options_)) {}

S3FileSystem::~S3FileSystem() = default;

Result<std::shared_ptr<S3FileSystem>> S3FileSystem::Make(S3Options options) {
  if (options.access_key_id.empty() || options.secret_access_key.empty()) {
    return Status::Invalid(
        "S3 needs credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a profile in "
        "the AWS credentials file");
  }
  if (options.region.empty()) return Status::Invalid("S3 needs a region (AWS_REGION)");
  if (options.part_bytes < (int64_t{5} << 20)) {
    return Status::Invalid("S3 part size must be at least 5 MiB");
  }
  if (options.upload_parts_in_flight < 1) {
    return Status::Invalid("S3 uploads need at least one part in flight");
  }
  if (options.list_page_keys < 1 || options.list_page_keys > 1000) {
    return Status::Invalid("S3 list pages hold 1 to 1000 keys");
  }
  if (options.max_attempts < 1 || options.initial_backoff_ms < 1) {
    return Status::Invalid("S3 needs at least one attempt and a positive backoff");
  }
  RETURN_NOT_OK(ObjectUrl(options, "bucket", "").status());
  return std::shared_ptr<S3FileSystem>(new S3FileSystem(std::move(options)));
}

Status S3FileSystem::CheckAccess(const std::string& uri) {
  ASSIGN_OR_RAISE(S3Location location, ParseS3Uri(uri));
  auto page = client_->ListAll(location.bucket, DirPrefix(location.key), "/", 1, true);
  if (!page.ok()) return page.status().WithContext("cannot use " + uri);
  return Status::OK();
}

Status S3FileSystem::CreateDirs(const std::string& path) { return ParseS3Uri(path).status(); }

Result<std::vector<std::string>> S3FileSystem::ListDir(const std::string& path) {
  ASSIGN_OR_RAISE(S3Location location, ParseS3Uri(path));
  const std::string prefix = DirPrefix(location.key);
  ASSIGN_OR_RAISE(ListPage page,
                  client_->ListAll(location.bucket, prefix, "/", options_.list_page_keys));
  std::vector<std::string> names;
  for (const auto& object : page.objects) names.push_back(object.key.substr(prefix.size()));
  for (const auto& p : page.common_prefixes) {
    std::string name = p.substr(prefix.size());
    if (!name.empty() && name.back() == '/') name.pop_back();
    names.push_back(std::move(name));
  }
  if (names.empty()) return Status::NotFound("no objects under " + path);
  return names;
}

Result<std::unique_ptr<File>> S3FileSystem::OpenFile(const std::string& path, FileMode mode) {
  ASSIGN_OR_RAISE(S3Location location, ParseS3Uri(path));
  if (location.key.empty()) return Status::Invalid(path + " names a bucket, not an object");
  switch (mode) {
    case FileMode::kRead: {
      ASSIGN_OR_RAISE(int64_t size, client_->Head(location.bucket, location.key));
      return std::unique_ptr<File>(new S3ReadFile(path, client_.get(), std::move(location), size));
    }
    case FileMode::kCreate:
    case FileMode::kCreatePrivate:
    case FileMode::kCreateSequential:
      return std::unique_ptr<File>(new S3WriteFile(path, client_.get(), std::move(location),
                                                   options_.part_bytes,
                                                   options_.upload_parts_in_flight));
    case FileMode::kWrite: break;
  }
  return Status::NotImplemented(path + ": S3 objects cannot be changed in place");
}

Status S3FileSystem::SyncDir(const std::string& path) { return ParseS3Uri(path).status(); }

Status S3FileSystem::Rename(const std::string& from, const std::string&) {
  return Status::NotImplemented("S3 has no rename (" + from +
                                "): objects are written once under their final name");
}

Status S3FileSystem::RenameNoReplace(const std::string& from, const std::string& to) {
  return Rename(from, to);
}

Status S3FileSystem::Remove(const std::string& path) {
  ASSIGN_OR_RAISE(S3Location location, ParseS3Uri(path));
  return client_->Delete(location.bucket, location.key);
}

Status S3FileSystem::RemoveAll(const std::string& path) {
  ASSIGN_OR_RAISE(S3Location location, ParseS3Uri(path));
  if (location.key.empty()) return Status::Invalid("refusing to empty the whole bucket " + path);
  ASSIGN_OR_RAISE(ListPage page, client_->ListAll(location.bucket, DirPrefix(location.key), "",
                                                  options_.list_page_keys));
  for (const auto& object : page.objects) {
    RETURN_NOT_OK(client_->Delete(location.bucket, object.key));
  }
  return client_->Delete(location.bucket, location.key);
}

Result<std::vector<std::string>> S3FileSystem::ListFilesRecursively(const std::string& path) {
  ASSIGN_OR_RAISE(S3Location location, ParseS3Uri(path));
  ASSIGN_OR_RAISE(ListPage page, client_->ListAll(location.bucket, DirPrefix(location.key), "",
                                                  options_.list_page_keys));
  std::vector<std::string> paths;
  for (const auto& object : page.objects) paths.push_back(Uri(location.bucket, object.key));
  return paths;
}

Result<std::unique_ptr<FileLock>> S3FileSystem::LockFile(const std::string& path) {
  return Status::NotImplemented("S3 has no locks (" + path + ")");
}

Result<int64_t> S3FileSystem::FileSize(const std::string& path) {
  ASSIGN_OR_RAISE(S3Location location, ParseS3Uri(path));
  return client_->Head(location.bucket, location.key);
}

Result<int64_t> S3FileSystem::FreeSpace(const std::string&) {
  return std::numeric_limits<int64_t>::max();
}

}  // namespace oxbow::storage
