// libFuzzer target: Avro object container files (header map, schema JSON, blocks, deflate,
// every datum type). A file that decodes must re-encode and decode to the same records.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "oxbow/iceberg/avro.h"

namespace {

bool SameValue(const oxbow::iceberg::AvroValue& a, const oxbow::iceberg::AvroValue& b) {
  if (a.type != b.type || a.b != b.b || a.i != b.i || a.bytes != b.bytes ||
      a.items.size() != b.items.size() || a.entries.size() != b.entries.size()) {
    return false;
  }
  // Doubles compare by bits so that NaN payloads and -0.0 count.
  if (std::memcmp(&a.d, &b.d, sizeof(double)) != 0) return false;
  for (size_t i = 0; i < a.items.size(); ++i) {
    if (!SameValue(a.items[i], b.items[i])) return false;
  }
  for (size_t i = 0; i < a.entries.size(); ++i) {
    if (a.entries[i].first != b.entries[i].first ||
        !SameValue(a.entries[i].second, b.entries[i].second)) {
      return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace oxbow::iceberg;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto file = ReadAvroFile(bytes);
  if (!file.ok()) return 0;

  std::vector<std::pair<std::string, std::string>> extra;
  for (const auto& kv : file->metadata) {
    if (kv.first != "avro.schema" && kv.first != "avro.codec") extra.push_back(kv);
  }
  AvroWriterOptions options;
  options.block_bytes = 64;  // several blocks
  auto writer = AvroFileWriter::Make(file->schema_json, extra, options);
  if (!writer.ok()) abort();  // the reader accepted this schema
  for (const auto& record : file->records) {
    if (!(*writer)->Append(record).ok()) abort();  // a decoded datum must encode
  }
  auto written = (*writer)->Finish();
  if (!written.ok()) abort();
  auto again = ReadAvroFile(*written);
  if (!again.ok() || again->records.size() != file->records.size()) abort();
  for (size_t i = 0; i < file->records.size(); ++i) {
    if (!SameValue(file->records[i], again->records[i])) abort();
  }
  return 0;
}
