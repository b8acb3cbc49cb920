// libFuzzer target: footer parsing, page headers, decompression, page decoding and the
// whole-file verifier.
#include <cstddef>
#include <cstdint>
#include <string>

#include "oxbow/parquet/metadata.h"
#include "oxbow/parquet/reader.h"
#include "oxbow/parquet/verify.h"
#include "oxbow/testing/string_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace oxbow;
  // The raw bytes as a bare footer and as a page header, too.
  parquet::FileMetaData metadata;
  (void)parquet::ParseFileMetaData(data, size, &metadata);
  parquet::PageHeader header;
  size_t consumed = 0;
  (void)parquet::ParsePageHeader(data, size, &header, &consumed);

  const std::string bytes(reinterpret_cast<const char*>(data), size);
  oxbow::testing::StringFile file("fuzz.parquet", bytes);
  (void)parquet::VerifyFile(file);

  auto reader = parquet::FileReader::Open(Buffer::FromString(bytes));
  if (!reader.ok()) return 0;
  for (int g = 0; g < (*reader)->num_row_groups(); ++g) {
    std::vector<int> columns;
    for (int c = 0; c < (*reader)->schema()->num_fields(); ++c) columns.push_back(c);
    auto batch = (*reader)->ReadRowGroup(g, columns);
    if (batch.ok()) (void)(*batch)->Validate();
  }
  return 0;
}
