#include "oxbow/cli/compact_schema.h"

#include <gtest/gtest.h>

namespace oxbow::cli {
namespace {

TEST(CompactSchemaTest, ParsesFieldsAndNamesErrors) {
  auto schema = ParseCompactSchema(
      "id int64 not null, name string,ts timestamp[us, tz=UTC] , d decimal128(10, 2) null");
  ASSERT_TRUE(schema.ok()) << schema.status().ToString();
  EXPECT_EQ((*schema)->ToString(),
            "id: int64 not null\nname: string\nts: timestamp[us, tz=UTC]\nd: decimal128(10, 2)");
  EXPECT_EQ(ParseCompactSchema("id").status().message(),
            "field 'id' needs a type, as in 'id int64'");
  EXPECT_EQ(ParseCompactSchema("id int64,").status().message(),
            "empty field in schema 'id int64,'");
  EXPECT_EQ(ParseCompactSchema("x intt").status().message(), "field 'x': unknown type 'intt'");
  EXPECT_EQ(ParseCompactSchema("a int8, a int8").status().message(), "duplicate field name 'a'");
}

}  // namespace
}  // namespace oxbow::cli
