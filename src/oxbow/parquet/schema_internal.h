// Arrow <-> Parquet schema mapping (internal to the parquet module).
#pragma once

#include <optional>

#include "oxbow/arrow/schema.h"
#include "oxbow/parquet/metadata.h"

namespace oxbow::parquet::internal {

// The field metadata key pyarrow uses for SchemaElement.field_id.
inline constexpr std::string_view kFieldIdKey = "PARQUET:field_id";

// Bytes of the smallest two's complement integer that holds every decimal of `precision` digits.
int32_t DecimalByteWidth(int32_t precision);

// The field id stored in field metadata "PARQUET:field_id", if any.
Result<std::optional<int32_t>> FieldIdOf(const arrow::Field& field);

// The leaf SchemaElement for an Arrow field, mapped the way pyarrow maps it.
Result<SchemaElement> FieldToSchemaElement(const arrow::Field& field);

// The Arrow field for a leaf SchemaElement (the inverse, plus legacy and foreign annotations).
Result<arrow::Field> SchemaElementToField(const SchemaElement& element);

}  // namespace oxbow::parquet::internal
