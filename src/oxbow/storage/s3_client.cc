// The S3 client: one libcurl easy handle per request (pooled, so connections are reused),
// SigV4 signing by libcurl (CURLOPT_AWS_SIGV4), retries with exponential backoff.
#include <curl/curl.h>
#include <openssl/evp.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>

#include "oxbow/storage/s3_internal.h"

namespace oxbow::storage {

namespace {

// Ranged GETs below this size use plain allocations (cheap at that size), not the pool.
constexpr int64_t kMinPooledRead = int64_t{1} << 20;

constexpr char kEmptySha256[] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

std::string HexSha256(std::string_view bytes) {
  if (bytes.empty()) return kEmptySha256;
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) {
    hex.push_back(kHex[digest[i] >> 4]);
    hex.push_back(kHex[digest[i] & 15]);
  }
  return hex;
}

struct Upload {
  std::string_view body;
  size_t sent = 0;
};

size_t ReadBody(char* out, size_t size, size_t count, void* user) {
  auto* upload = static_cast<Upload*>(user);
  size_t n = std::min(size * count, upload->body.size() - upload->sent);
  std::memcpy(out, upload->body.data() + upload->sent, n);
  upload->sent += n;
  return n;
}

// Where an answer's body goes: a 206's into the request's buffer, any other into text.
struct BodySink {
  CURL* curl = nullptr;
  uint8_t* into = nullptr;
  int64_t into_capacity = 0;
  int64_t* into_bytes = nullptr;
  std::string* text = nullptr;
  bool overflow = false;  // a 206 longer than the buffer
};

size_t WriteBody(char* data, size_t size, size_t count, void* user) {
  auto* sink = static_cast<BodySink*>(user);
  const size_t n = size * count;
  long status = 0;
  if (sink->into != nullptr &&
      curl_easy_getinfo(sink->curl, CURLINFO_RESPONSE_CODE, &status) == CURLE_OK && status == 206) {
    if (*sink->into_bytes + static_cast<int64_t>(n) > sink->into_capacity) {
      sink->overflow = true;
      return 0;  // libcurl stops the transfer
    }
    std::memcpy(sink->into + *sink->into_bytes, data, n);
    *sink->into_bytes += static_cast<int64_t>(n);
    return n;
  }
  sink->text->append(data, n);
  return n;
}

size_t ReadHeader(char* data, size_t size, size_t count, void* user) {
  std::string_view line(data, size * count);
  constexpr std::string_view kEtag = "etag:";
  if (line.size() > kEtag.size()) {
    std::string name(line.substr(0, kEtag.size()));
    std::transform(name.begin(), name.end(), name.begin(), ::tolower);
    if (name == kEtag) {
      std::string_view value = line.substr(kEtag.size());
      while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
        value.remove_prefix(1);
      while (!value.empty() &&
             (value.back() == '\r' || value.back() == '\n' || value.back() == ' ')) {
        value.remove_suffix(1);
      }
      *static_cast<std::string*>(user) = std::string(value);
    }
  }
  return size * count;
}

std::string Describe(const S3Request& request) {
  return request.method + " s3://" + request.bucket + "/" + request.key;
}

S3Request Request(std::string method, const std::string& bucket, const std::string& key,
                  std::string query = {}) {
  S3Request request;
  request.method = std::move(method);
  request.bucket = bucket;
  request.key = key;
  request.query = std::move(query);
  return request;
}

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

}  // namespace

S3Client::S3Client(S3Options options)
    : options_(std::move(options)), read_buffers_(options_.read_buffer_pool_bytes, kMinPooledRead) {
  GlobalInit();
}

S3Client::~S3Client() {
  for (void* handle : idle_) curl_easy_cleanup(static_cast<CURL*>(handle));
}

void* S3Client::TakeHandle() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_.empty()) {
      void* handle = idle_.back();
      idle_.pop_back();
      return handle;
    }
  }
  return curl_easy_init();
}

void S3Client::ReturnHandle(void* handle) {
  std::lock_guard<std::mutex> lock(mu_);
  idle_.push_back(handle);
}

Result<S3Response> S3Client::Attempt(const S3Request& request, const std::string& url,
                                     bool* retryable) {
  *retryable = false;
  CURL* curl = static_cast<CURL*>(TakeHandle());
  if (curl == nullptr) return Status::Internal("curl_easy_init failed");
  curl_easy_reset(curl);
  S3Response response;
  Upload upload{request.body};
  char error[CURL_ERROR_SIZE] = {0};
  struct curl_slist* headers = nullptr;
  const std::string sha = "x-amz-content-sha256: " + HexSha256(request.body);
  headers = curl_slist_append(headers, sha.c_str());
  std::string token;
  if (!options_.session_token.empty()) {
    token = "x-amz-security-token: " + options_.session_token;
    headers = curl_slist_append(headers, token.c_str());
  }
  std::string range;
  if (!request.range.empty()) {
    range = "Range: " + request.range;
    headers = curl_slist_append(headers, range.c_str());
  }
  const std::string provider = SigV4Provider(options_);
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_PATH_AS_IS, 1L);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(curl, CURLOPT_AWS_SIGV4, provider.c_str());
  curl_easy_setopt(curl, CURLOPT_USERNAME, options_.access_key_id.c_str());
  curl_easy_setopt(curl, CURLOPT_PASSWORD, options_.secret_access_key.c_str());
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options_.connect_timeout_ms));
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME,
                   std::max(1L, static_cast<long>(options_.stall_timeout_ms / 1000)));
  // Larger transfer buffers than the 16/64 KiB defaults: fewer callbacks per object.
  curl_easy_setopt(curl, CURLOPT_BUFFERSIZE, 512L * 1024);
  curl_easy_setopt(curl, CURLOPT_UPLOAD_BUFFERSIZE, 512L * 1024);
  BodySink sink{curl, request.into, request.into_capacity, &response.into_bytes, &response.body};
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, WriteBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, ReadHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &response.etag);
  if (request.method == "PUT") {
    // The body comes from a read callback. (An "Expect:" header to skip the 100-continue
    // round trip would be signed by libcurl 7.88 yet not sent, breaking the signature.)
    curl_easy_setopt(curl, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(curl, CURLOPT_READFUNCTION, ReadBody);
    curl_easy_setopt(curl, CURLOPT_READDATA, &upload);
    curl_easy_setopt(curl, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
  } else if (request.method == "POST") {
    // Not libcurl's default form type, which servers may parse (and consume) as a form.
    headers = curl_slist_append(headers, "Content-Type: application/xml");
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    // Never null: a null POSTFIELDS makes libcurl read the body from stdin.
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request.body.empty() ? "" : request.body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(request.body.size()));
  } else if (request.method == "HEAD") {
    curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  } else if (request.method == "DELETE") {
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, "DELETE");
  }
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  CURLcode code = curl_easy_perform(curl);
  curl_slist_free_all(headers);
  // Nothing secret stays in a pooled handle.
  curl_easy_setopt(curl, CURLOPT_USERNAME, "");
  curl_easy_setopt(curl, CURLOPT_PASSWORD, "");
  if (sink.overflow) {
    curl_easy_cleanup(curl);
    return Status::IOError(Describe(request) + ": the answer is longer than the range " +
                           request.range);
  }
  if (code != CURLE_OK) {
    curl_easy_cleanup(curl);  // the connection may be in any state
    *retryable = IsRetryableCurlError(code);
    return CurlErrorToStatus(code, error, Describe(request));
  }
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
  curl_off_t length = -1;
  curl_easy_getinfo(curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
  response.content_length = length;
  ReturnHandle(curl);
  if (response.status < 200 || response.status > 299) {
    *retryable = IsRetryableHttpStatus(response.status);
    return HttpErrorToStatus(response.status, response.body, Describe(request));
  }
  return response;
}

Result<S3Response> S3Client::Send(const S3Request& request) {
  ASSIGN_OR_RAISE(std::string url, ObjectUrl(options_, request.bucket, request.key, request.query));
  thread_local std::mt19937_64 rng(std::random_device{}());
  int64_t backoff_ms = options_.initial_backoff_ms;
  for (int attempt = 1;; ++attempt) {
    bool retryable = false;
    auto response = Attempt(request, url, &retryable);
    if (response.ok() || !retryable || attempt >= options_.max_attempts) {
      if (!response.ok() && retryable) {
        return response.status().WithContext("gave up after " + std::to_string(attempt) +
                                             " attempts");
      }
      return response;
    }
    // Full jitter: a random wait in [backoff/2, backoff].
    const int64_t wait_ms = backoff_ms / 2 + static_cast<int64_t>(rng() % (backoff_ms / 2 + 1));
    spdlog::warn("S3: {} (attempt {} of {}), retrying in {} ms", response.status().message(),
                 attempt, options_.max_attempts, wait_ms);
    std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
    backoff_ms = std::min(options_.max_backoff_ms, backoff_ms * 2);
  }
}

Result<std::shared_ptr<Buffer>> S3Client::Get(const std::string& bucket, const std::string& key,
                                              int64_t offset, int64_t length) {
  S3Request request = Request("GET", bucket, key);
  request.range = "bytes=" + std::to_string(offset) + "-" + std::to_string(offset + length - 1);
  ASSIGN_OR_RAISE(auto out, read_buffers_.Take(length));
  request.into = out->mutable_data();
  request.into_capacity = length;
  ASSIGN_OR_RAISE(S3Response response, Send(request));
  if (response.status == 206) {
    out->Truncate(response.into_bytes);
    return std::shared_ptr<Buffer>(std::move(out));
  }
  if (response.status != 200) {
    return Status::IOError(Describe(request) + ": unexpected HTTP " +
                           std::to_string(response.status) + " to a ranged GET");
  }
  // A server that ignores Range sends the whole object.
  if (static_cast<int64_t>(response.body.size()) < offset) return Buffer::Empty();
  return Buffer::CopyFrom(std::string_view(response.body).substr(offset, length));
}

Status S3Client::Put(const std::string& bucket, const std::string& key, std::string_view body) {
  S3Request request = Request("PUT", bucket, key);
  request.body = body;
  return Send(request).status();
}

Result<int64_t> S3Client::Head(const std::string& bucket, const std::string& key) {
  auto head = Send(Request("HEAD", bucket, key));
  if (!head.ok() && !head.status().IsNotFound()) {
    // A HEAD answer has no body, so no error code: a one-byte GET fetches S3's reason.
    auto get = Get(bucket, key, 0, 1);
    return get.ok() ? head.status() : get.status();
  }
  ASSIGN_OR_RAISE(S3Response response, std::move(head));
  if (response.content_length < 0) {
    return Status::IOError("HEAD s3://" + bucket + "/" + key + ": no Content-Length");
  }
  return response.content_length;
}

Status S3Client::Delete(const std::string& bucket, const std::string& key) {
  return Send(Request("DELETE", bucket, key)).status();
}

Result<ListPage> S3Client::ListAll(const std::string& bucket, const std::string& prefix,
                                   const std::string& delimiter, int max_keys,
                                   bool first_page_only) {
  ListPage all;
  std::string token;
  for (;;) {
    // Parameters sorted by name: the query is signed as given.
    std::string query;
    if (!token.empty()) query += "continuation-token=" + UriEncode(token, true) + "&";
    if (!delimiter.empty()) query += "delimiter=" + UriEncode(delimiter, true) + "&";
    query += "list-type=2&max-keys=" + std::to_string(max_keys);
    query += "&prefix=" + UriEncode(prefix, true);
    S3Request request = Request("GET", bucket, "", query);
    ASSIGN_OR_RAISE(S3Response response, Send(request));
    auto page = ParseListObjectsV2(response.body);
    if (!page.ok()) return page.status().WithContext("LIST s3://" + bucket + "/" + prefix);
    for (auto& object : page->objects) all.objects.push_back(std::move(object));
    for (auto& p : page->common_prefixes) all.common_prefixes.push_back(std::move(p));
    if (page->next_continuation_token.empty() || first_page_only) break;
    token = std::move(page->next_continuation_token);
  }
  return all;
}

Result<std::string> S3Client::CreateMultipartUpload(const std::string& bucket,
                                                    const std::string& key) {
  ASSIGN_OR_RAISE(S3Response response, Send(Request("POST", bucket, key, "uploads=")));
  auto id = ParseUploadId(response.body);
  if (!id.ok()) return id.status().WithContext("POST s3://" + bucket + "/" + key + "?uploads");
  return id;
}

Result<std::string> S3Client::UploadPart(const std::string& bucket, const std::string& key,
                                         const std::string& upload_id, int part_number,
                                         std::string_view body) {
  S3Request request = Request(
      "PUT", bucket, key,
      "partNumber=" + std::to_string(part_number) + "&uploadId=" + UriEncode(upload_id, true));
  request.body = body;
  ASSIGN_OR_RAISE(S3Response response, Send(request));
  if (response.etag.empty()) {
    return Status::IOError(Describe(request) + ": no ETag for part " + std::to_string(part_number));
  }
  return response.etag;
}

Status S3Client::CompleteMultipartUpload(const std::string& bucket, const std::string& key,
                                         const std::string& upload_id,
                                         const std::vector<std::string>& etags) {
  std::string xml = "<CompleteMultipartUpload>";
  for (size_t i = 0; i < etags.size(); ++i) {
    xml += "<Part><PartNumber>" + std::to_string(i + 1) + "</PartNumber><ETag>" + etags[i] +
           "</ETag></Part>";
  }
  xml += "</CompleteMultipartUpload>";
  S3Request request = Request("POST", bucket, key, "uploadId=" + UriEncode(upload_id, true));
  request.body = xml;
  ASSIGN_OR_RAISE(S3Response response, Send(request));
  // S3 may answer 200 with an <Error> body when the completion failed late.
  auto parsed = ParseXml(response.body);
  if (parsed.ok() && parsed->name == "Error") {
    return HttpErrorToStatus(response.status, response.body, Describe(request));
  }
  return Status::OK();
}

Status S3Client::AbortMultipartUpload(const std::string& bucket, const std::string& key,
                                      const std::string& upload_id) {
  return Send(Request("DELETE", bucket, key, "uploadId=" + UriEncode(upload_id, true))).status();
}

}  // namespace oxbow::storage
