#include "oxbow/kv/merge.h"

#include <algorithm>
#include <cstring>
#include <set>

namespace oxbow::kv {

namespace {

using arrow::TypeId;

constexpr std::pair<const char*, MergeEngine> kEngines[] = {
    {"last_row", MergeEngine::kLastRow},
    {"first_row", MergeEngine::kFirstRow},
    {"versioned", MergeEngine::kVersioned},
    {"aggregate", MergeEngine::kAggregate},
};

constexpr std::pair<const char*, Aggregation> kAggregations[] = {
    {"last", Aggregation::kLast},      {"last_non_null", Aggregation::kLastNonNull},
    {"first", Aggregation::kFirst},    {"first_non_null", Aggregation::kFirstNonNull},
    {"sum", Aggregation::kSum},        {"min", Aggregation::kMin},
    {"max", Aggregation::kMax},        {"bool_and", Aggregation::kBoolAnd},
    {"bool_or", Aggregation::kBoolOr}, {"listagg", Aggregation::kListAgg},
};

template <typename Table>
std::string Names(const Table& table) {
  std::string out;
  for (const auto& [name, value] : table) out += std::string(out.empty() ? "" : ", ") + name;
  return out;
}

// Strings, binaries and fixed-size binaries compare by their bytes, unsigned.
bool IsOrdered(const arrow::DataType& type) {
  return type.id() != TypeId::kBool && !type.is_nested();
}

bool IsSummable(const arrow::DataType& type) {
  return type.is_integer() || type.is_floating() || type.id() == TypeId::kDecimal128;
}

Status CheckAggregationType(const arrow::Field& field, Aggregation agg, const std::string& name) {
  bool ok = true;
  switch (agg) {
    case Aggregation::kSum: ok = IsSummable(field.type); break;
    case Aggregation::kMin:
    case Aggregation::kMax: ok = IsOrdered(field.type); break;
    case Aggregation::kBoolAnd:
    case Aggregation::kBoolOr: ok = field.type.id() == TypeId::kBool; break;
    case Aggregation::kListAgg: ok = field.type.id() == TypeId::kString; break;
    default: break;
  }
  if (ok) return Status::OK();
  return Status::Invalid("aggregate function " + Quote(name) + " cannot apply to column " +
                         Quote(field.name) + " of type " + field.type.ToString());
}

template <typename T>
T Load(const Cell& c) {
  T v{};
  std::memcpy(&v, c.bytes.data(), sizeof(T));
  return v;
}

template <typename T>
Cell Store(T v) {
  return Cell{false, std::string(reinterpret_cast<const char*>(&v), sizeof(T))};
}

template <typename T>
int Compare3(T a, T b) {
  return a < b ? -1 : (b < a ? 1 : 0);
}

// Orders two non-null values of `type`.
int CompareCells(const arrow::DataType& type, const Cell& a, const Cell& b) {
  switch (type.id()) {
    case TypeId::kInt8: return Compare3(Load<int8_t>(a), Load<int8_t>(b));
    case TypeId::kInt16: return Compare3(Load<int16_t>(a), Load<int16_t>(b));
    case TypeId::kInt32:
    case TypeId::kDate32: return Compare3(Load<int32_t>(a), Load<int32_t>(b));
    case TypeId::kInt64:
    case TypeId::kTimestamp: return Compare3(Load<int64_t>(a), Load<int64_t>(b));
    case TypeId::kUInt8: return Compare3(Load<uint8_t>(a), Load<uint8_t>(b));
    case TypeId::kUInt16: return Compare3(Load<uint16_t>(a), Load<uint16_t>(b));
    case TypeId::kUInt32: return Compare3(Load<uint32_t>(a), Load<uint32_t>(b));
    case TypeId::kUInt64: return Compare3(Load<uint64_t>(a), Load<uint64_t>(b));
    case TypeId::kFloat32: return Compare3(Load<float>(a), Load<float>(b));
    case TypeId::kFloat64: return Compare3(Load<double>(a), Load<double>(b));
    case TypeId::kDecimal128: return Compare3(Load<__int128>(a), Load<__int128>(b));
    default: return a.bytes.compare(b.bytes) < 0 ? -1 : (a.bytes == b.bytes ? 0 : 1);
  }
}

// Two's-complement sum of integers of T (wrapping, as Java's and Fluss's sums do).
template <typename T>
Cell WrappingSum(const Cell& a, const Cell& b) {
  using U = std::make_unsigned_t<T>;
  return Store<T>(static_cast<T>(static_cast<U>(Load<T>(a)) + static_cast<U>(Load<T>(b))));
}

Result<Cell> Sum(const arrow::Field& field, const Cell& a, const Cell& b) {
  switch (field.type.id()) {
    case TypeId::kInt8:
    case TypeId::kUInt8: return WrappingSum<int8_t>(a, b);
    case TypeId::kInt16:
    case TypeId::kUInt16: return WrappingSum<int16_t>(a, b);
    case TypeId::kInt32:
    case TypeId::kUInt32: return WrappingSum<int32_t>(a, b);
    case TypeId::kInt64:
    case TypeId::kUInt64: return WrappingSum<int64_t>(a, b);
    case TypeId::kFloat32: return Store<float>(Load<float>(a) + Load<float>(b));
    case TypeId::kFloat64: return Store<double>(Load<double>(a) + Load<double>(b));
    case TypeId::kDecimal128: {
      __int128 limit = 1;
      for (int i = 0; i < field.type.precision(); ++i) limit *= 10;
      const __int128 sum = Load<__int128>(a) + Load<__int128>(b);
      if (sum >= limit || sum <= -limit) {
        return Status::Invalid("the sum of column " + Quote(field.name) + " leaves " +
                               field.type.ToString());
      }
      return Store<__int128>(sum);
    }
    default: break;
  }
  return Status::Internal("sum over " + field.type.ToString());
}

// One aggregate step: the column's value after `update` lands on `old`.
Result<Cell> Aggregate(const arrow::Field& field, Aggregation agg, const std::string& delimiter,
                       const Cell& old, const Cell& update) {
  switch (agg) {
    case Aggregation::kLast: return update;
    case Aggregation::kLastNonNull: return update.null ? old : update;
    case Aggregation::kFirst: return old;
    case Aggregation::kFirstNonNull: return old.null ? update : old;
    default: break;
  }
  // The rest ignore nulls.
  if (update.null) return old;
  if (old.null) return update;
  switch (agg) {
    case Aggregation::kSum: return Sum(field, old, update);
    case Aggregation::kMin: return CompareCells(field.type, update, old) < 0 ? update : old;
    case Aggregation::kMax: return CompareCells(field.type, update, old) > 0 ? update : old;
    case Aggregation::kBoolAnd: return Cell{false, std::string(1, old.bytes[0] && update.bytes[0])};
    case Aggregation::kBoolOr: return Cell{false, std::string(1, old.bytes[0] || update.bytes[0])};
    case Aggregation::kListAgg: return Cell{false, old.bytes + delimiter + update.bytes};
    default: break;
  }
  return Status::Internal("unknown aggregation");
}

}  // namespace

Result<MergeRules> ParseMergeRules(const arrow::Schema& schema, const std::vector<int>& key_columns,
                                   const std::map<std::string, std::string>& properties) {
  MergeRules rules;
  const std::set<int> keys(key_columns.begin(), key_columns.end());
  rules.aggregations.assign(static_cast<size_t>(schema.num_fields()), Aggregation::kLastNonNull);
  rules.delimiters.assign(static_cast<size_t>(schema.num_fields()), ",");
  if (auto it = properties.find("merge_engine"); it != properties.end()) {
    auto found = std::find_if(std::begin(kEngines), std::end(kEngines),
                              [&](const auto& e) { return it->second == e.first; });
    if (found == std::end(kEngines)) {
      return Status::Invalid("merge_engine " + Quote(it->second) +
                             " is unknown (known: " + Names(kEngines) + ")");
    }
    rules.engine = found->second;
  }
  if (auto it = properties.find("changelog.image"); it != properties.end()) {
    if (it->second != "full" && it->second != "none") {
      return Status::Invalid("changelog.image " + Quote(it->second) +
                             " is unknown (known: full, none)");
    }
    rules.full_image = it->second == "full";
  }
  auto version = properties.find("merge_engine.version_column");
  if (rules.engine == MergeEngine::kVersioned) {
    if (version == properties.end()) {
      return Status::Invalid("merge_engine 'versioned' needs merge_engine.version_column");
    }
    rules.version_column = schema.GetFieldIndex(version->second);
    if (rules.version_column < 0) {
      return Status::Invalid("merge_engine.version_column " + Quote(version->second) +
                             " is not a column of the table");
    }
    if (keys.count(rules.version_column)) {
      return Status::Invalid("merge_engine.version_column " + Quote(version->second) +
                             " is a primary-key column; the version must be a value column");
    }
    const arrow::DataType& type = schema.field(rules.version_column).type;
    if (!type.is_integer() && type.id() != TypeId::kTimestamp) {
      return Status::Invalid("merge_engine.version_column " + Quote(version->second) +
                             " has type " + type.ToString() +
                             "; a version must be an integer or a timestamp");
    }
  } else if (version != properties.end()) {
    return Status::Invalid(
        "merge_engine.version_column is set but merge_engine is not 'versioned'");
  }
  for (const auto& [key, value] : properties) {
    if (key.rfind("merge_engine.", 0) == 0 && key != "merge_engine.version_column") {
      return Status::Invalid("table property " + Quote(key) + " is unknown");
    }
    if (key.rfind("fields.", 0) != 0) continue;
    const auto dot = key.rfind('.');
    const std::string column = key.substr(7, dot - 7);
    const std::string option = key.substr(dot + 1);
    const int index = schema.GetFieldIndex(column);
    if (dot <= 7 || index < 0) {
      return Status::Invalid("table property " + Quote(key) + " names no column of the table");
    }
    if (option != "agg" && option != "listagg_delimiter") {
      return Status::Invalid(
          "table property " + Quote(key) +
          " is unknown (known: fields.<col>.agg, fields.<col>.listagg_delimiter)");
    }
    if (rules.engine != MergeEngine::kAggregate) {
      return Status::Invalid("table property " + Quote(key) + " needs merge_engine 'aggregate'");
    }
    if (keys.count(index)) {
      return Status::Invalid("table property " + Quote(key) +
                             ": primary-key columns do not aggregate");
    }
    if (option == "listagg_delimiter") {
      rules.delimiters[static_cast<size_t>(index)] = value;
      continue;
    }
    auto found = std::find_if(std::begin(kAggregations), std::end(kAggregations),
                              [&v = value](const auto& a) { return v == a.first; });
    if (found == std::end(kAggregations)) {
      return Status::Invalid("aggregate function " + Quote(value) + " of column " + Quote(column) +
                             " is unknown (known: " + Names(kAggregations) + ")");
    }
    RETURN_NOT_OK(CheckAggregationType(schema.field(index), found->second, value));
    rules.aggregations[static_cast<size_t>(index)] = found->second;
  }
  return rules;
}

Result<std::optional<Row>> Merge(const MergeRules& rules, const arrow::Schema& schema,
                                 const Row* old, Row update, const std::vector<bool>& given) {
  if (old == nullptr) return std::optional<Row>(std::move(update));
  switch (rules.engine) {
    case MergeEngine::kFirstRow: return std::optional<Row>();
    case MergeEngine::kVersioned: {
      const size_t v = static_cast<size_t>(rules.version_column);
      const Cell& old_version = (*old)[v];
      if (!old_version.null &&
          CompareCells(schema.field(rules.version_column).type, update[v], old_version) < 0) {
        return std::optional<Row>();
      }
      break;
    }
    case MergeEngine::kAggregate: {
      Row merged = *old;
      for (size_t i = 0; i < merged.size(); ++i) {
        if (!given[i]) continue;
        ASSIGN_OR_RAISE(merged[i],
                        Aggregate(schema.field(static_cast<int>(i)), rules.aggregations[i],
                                  rules.delimiters[i], (*old)[i], update[i]));
      }
      return std::optional<Row>(std::move(merged));
    }
    case MergeEngine::kLastRow: break;
  }
  // last_row and versioned: the given columns replace the old ones.
  Row merged = *old;
  for (size_t i = 0; i < merged.size(); ++i) {
    if (given[i]) merged[i] = std::move(update[i]);
  }
  return std::optional<Row>(std::move(merged));
}

}  // namespace oxbow::kv
