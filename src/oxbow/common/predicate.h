// A comparison of one column with a constant, the simple predicate a read can prune with (a
// union read's "filter", docs/api.md). Shared by the request parser and the readers.
#pragma once

#include <cstdint>
#include <string>
#include <variant>

namespace oxbow {

struct ColumnPredicate {
  enum class Op { kLess, kLessEqual, kGreater, kGreaterEqual, kEqual, kNotEqual };
  std::string column;
  Op op = Op::kEqual;
  std::variant<int64_t, double, std::string> value;
};

}  // namespace oxbow
