// libFuzzer target: Avro object container files (header map, schema JSON, blocks, deflate,
// every datum type). A file that decodes must re-encode and decode to the same records.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "oxbow/iceberg/avro.h"

namespace {

// int and long are one integer in Avro's schema resolution (an int is promoted where the
// writer's schema says long), so they compare by value.
bool SameType(oxbow::iceberg::AvroType a, oxbow::iceberg::AvroType b) {
  using oxbow::iceberg::AvroType;
  auto integer = [](AvroType t) { return t == AvroType::kInt || t == AvroType::kLong; };
  return a == b || (integer(a) && integer(b));
}

bool SameValue(const oxbow::iceberg::AvroValue& a, const oxbow::iceberg::AvroValue& b) {
  if (!SameType(a.type, b.type) || a.b != b.b || a.i != b.i || a.bytes != b.bytes ||
      a.items.size() != b.items.size() || a.entries.size() != b.entries.size()) {
    return false;
  }
  // Doubles compare by bits so that -0.0 counts; any NaN equals any NaN, since a float NaN's
  // payload may be quieted on its way through double and back (the CPU's, not the format's).
  const bool both_nan = std::isnan(a.d) && std::isnan(b.d);
  if (!both_nan && std::memcmp(&a.d, &b.d, sizeof(double)) != 0) return false;
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
