// Fuzzes the parsers of S3's answers: XML, ListObjectsV2 pages, multipart ids and errors.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "oxbow/storage/s3_internal.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  (void)oxbow::storage::ParseXml(body);
  (void)oxbow::storage::ParseListObjectsV2(body);
  (void)oxbow::storage::ParseUploadId(body);
  (void)oxbow::storage::HttpErrorToStatus(503, body, "GET s3://bucket/key");
  (void)oxbow::storage::ParseCredentialsFile(body, "default");
  return 0;
}
