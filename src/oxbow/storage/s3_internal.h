// The S3 client under S3FileSystem and its pure parts (URLs, XML, errors, credentials file),
// which the unit tests and the fuzz target call directly.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "oxbow/common/buffer.h"
#include "oxbow/common/buffer_pool.h"
#include "oxbow/common/status.h"
#include "oxbow/storage/s3.h"

namespace oxbow::storage {

// "s3://bucket/key" split; the key may be empty (the bucket's root).
struct S3Location {
  std::string bucket;
  std::string key;
};
Result<S3Location> ParseS3Uri(std::string_view uri);

// RFC 3986 percent-encoding as SigV4 wants it: unreserved characters (A-Z a-z 0-9 - . _ ~) kept,
// '/' kept unless `encode_slash`, every other byte %XX (upper-case hex).
std::string UriEncode(std::string_view s, bool encode_slash);

// The URL of `key` in `bucket` (path-style or virtual-host as `options` says), followed by
// "?query" when `query` is not empty. `query` must already be encoded and sorted by name, since
// it is signed as given.
Result<std::string> ObjectUrl(const S3Options& options, std::string_view bucket,
                              std::string_view key, std::string_view query = {});

// The CURLOPT_AWS_SIGV4 value: "aws:amz:<region>:s3".
std::string SigV4Provider(const S3Options& options);

// A parsed XML element: S3 answers are small documents of nested elements with text.
struct XmlElement {
  std::string name;  // without any namespace prefix
  std::string text;  // the character data directly inside (entities decoded)
  std::vector<XmlElement> children;

  const XmlElement* Child(std::string_view child_name) const;
  // The text of the first child named `child_name`, or "" when there is none.
  std::string ChildText(std::string_view child_name) const;
};
// Parses a whole document (prolog, comments and attributes skipped); Invalid on malformed XML,
// nesting deeper than 32, or a DOCTYPE.
Result<XmlElement> ParseXml(std::string_view document);

struct ListedObject {
  std::string key;
  int64_t size = 0;
};
// One page of ListObjectsV2.
struct ListPage {
  std::vector<ListedObject> objects;
  std::vector<std::string> common_prefixes;
  std::string next_continuation_token;  // empty on the last page
};
Result<ListPage> ParseListObjectsV2(std::string_view xml);
// The UploadId of an InitiateMultipartUploadResult.
Result<std::string> ParseUploadId(std::string_view xml);

// The one place S3's answers and libcurl's errors become a Status. `what` names the request,
// e.g. "GET s3://bucket/key". 404 and NoSuchKey/NoSuchBucket -> NotFound; refused credentials
// (InvalidAccessKeyId, SignatureDoesNotMatch, ExpiredToken, ...) -> Unauthenticated; AccessDenied
// -> PermissionDenied; 409/412 -> AlreadyExists; anything else -> IOError; always with S3's Code
// and Message when the body has them.
Status HttpErrorToStatus(long http_status, std::string_view body, std::string_view what);
Status CurlErrorToStatus(int curl_code, std::string_view detail, std::string_view what);
// Whether a failed attempt may be retried: network errors and timeouts, 500/502/503/504, 429.
bool IsRetryableHttpStatus(long http_status);
bool IsRetryableCurlError(int curl_code);

struct Credentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;
};
// The profile `profile` of an AWS credentials file (INI: [profile], key = value, # or ; comments).
std::optional<Credentials> ParseCredentialsFile(std::string_view text, std::string_view profile);

// One HTTP exchange with S3, signed (SigV4 by libcurl) and retried.
struct S3Request {
  std::string method;  // GET, PUT, POST, HEAD, DELETE
  std::string bucket;
  std::string key;
  std::string query;      // encoded, sorted by name
  std::string_view body;  // PUT and POST
  std::string range;      // "bytes=a-b" for a ranged GET
  // A ranged GET's destination: a 206 answer's body is written here (an error if longer than
  // into_capacity), not into S3Response::body, so the bytes are copied once, from libcurl's
  // buffer.
  uint8_t* into = nullptr;
  int64_t into_capacity = 0;
};
struct S3Response {
  long status = 0;
  std::string body;        // the answer's body (a 206 with S3Request::into: empty)
  int64_t into_bytes = 0;  // bytes written to S3Request::into
  std::string etag;
  int64_t content_length = -1;
};

class S3Client {
 public:
  explicit S3Client(S3Options options);
  ~S3Client();

  // Sends the request until it succeeds (2xx), fails for good, or runs out of attempts.
  Result<S3Response> Send(const S3Request& request);

  // Bytes [offset, offset + length) of the object, or fewer at its end, 64-byte aligned. A
  // range of 1 MiB or more is read into a buffer recycled through a pool (S3Options).
  Result<std::shared_ptr<Buffer>> Get(const std::string& bucket, const std::string& key,
                                      int64_t offset, int64_t length);
  Status Put(const std::string& bucket, const std::string& key, std::string_view body);
  // The object's size; NotFound when missing.
  Result<int64_t> Head(const std::string& bucket, const std::string& key);
  Status Delete(const std::string& bucket, const std::string& key);
  // Every page of ListObjectsV2 (delimiter "" for all keys below the prefix).
  Result<ListPage> ListAll(const std::string& bucket, const std::string& prefix,
                           const std::string& delimiter, int max_keys = 1000,
                           bool first_page_only = false);
  Result<std::string> CreateMultipartUpload(const std::string& bucket, const std::string& key);
  // The part's ETag.
  Result<std::string> UploadPart(const std::string& bucket, const std::string& key,
                                 const std::string& upload_id, int part_number,
                                 std::string_view body);
  Status CompleteMultipartUpload(const std::string& bucket, const std::string& key,
                                 const std::string& upload_id,
                                 const std::vector<std::string>& etags);
  Status AbortMultipartUpload(const std::string& bucket, const std::string& key,
                              const std::string& upload_id);

 private:
  // One attempt; `retryable` tells whether a failure may be retried.
  Result<S3Response> Attempt(const S3Request& request, const std::string& url, bool* retryable);
  void* TakeHandle();
  void ReturnHandle(void* handle);

  S3Options options_;
  BufferPool read_buffers_;  // of ranged GETs
  std::mutex mu_;
  std::vector<void*> idle_;  // CURL easy handles, kept for their connections
};

}  // namespace oxbow::storage
