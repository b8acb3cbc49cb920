// What the JSON Lines and CSV readers share: parsed cells, a JSON cursor, and builders that turn
// cells (and nested JSON values) into one column.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>

#include "oxbow/arrow/array.h"
#include "oxbow/arrow/schema.h"
#include "oxbow/common/status.h"

namespace oxbow::text::internal {

// One parsed value. CSV gives kNull (empty unquoted field) or kString; JSON gives all kinds,
// an object or array as its raw text (kJson).
struct Cell {
  enum Kind : uint8_t { kNull, kBool, kNumber, kString, kJson };
  Kind kind = kNull;
  std::string_view text;  // number token, decoded string or raw JSON text
  bool boolean = false;
};

std::string_view KindName(Cell::Kind kind);

// Stable storage for unescaped strings (deque elements never move).
class Scratch {
 public:
  void Reset() { used_ = 0; }
  std::string* Next();

 private:
  std::deque<std::string> pool_;
  size_t used_ = 0;
};

// Reads JSON values from text. Strings with escapes are decoded into storage that lives until
// the next Reset().
class JsonCursor {
 public:
  void Reset(std::string_view text);

  void SkipSpace();
  bool Consume(char c);
  char Peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  // Consumes `word` if the text continues with it.
  bool ConsumeWord(std::string_view word);
  // An error naming the current position.
  Status Error(std::string_view what) const;
  // Fails unless only spaces are left.
  Status ExpectEnd(std::string_view what);

  // Calls `item` (a Status()) for each item of an array or member of an object whose opening
  // bracket was consumed, at the item, up to and including `close`.
  template <typename F>
  Status ForEachItem(char close, F&& item) {
    SkipSpace();
    if (Consume(close)) return Status::OK();
    while (true) {
      SkipSpace();
      RETURN_NOT_OK(item());
      SkipSpace();
      if (Consume(',')) continue;
      if (Consume(close)) return Status::OK();
      return Error(std::string("expected ',' or '") + close + "'");
    }
  }
  // An object member's key and its ':', leaving the cursor at the value.
  Status ParseKey(std::string_view* key);
  // One JSON value; an object or array is kept as its raw text (kJson).
  Status ParseValue(Cell* cell);
  // At an opening quote.
  Status ParseString(std::string_view* out);

 private:
  Status ParseHex4(uint32_t* v);
  // Skips a balanced object or array (at its opening bracket), strings included.
  Status SkipNested();

  std::string_view s_;
  size_t i_ = 0;
  Scratch scratch_;
};

// Builds one column from cells: scalar types from their text (docs/text-formats.md), nested
// types (list, struct, map, fixed_size_list) from their JSON form.
class ValueBuilder {
 public:
  static Result<std::unique_ptr<ValueBuilder>> Make(const arrow::Field& field);
  virtual ~ValueBuilder() = default;

  // A row's value; a nested column takes a kJson cell or a string holding JSON (CSV).
  virtual Status Append(const Cell& cell) = 0;
  // The JSON value at `json` (an item, field or map value inside a nested value).
  virtual Status AppendJson(JsonCursor* json) = 0;
  // The slot under a null parent: null, or an empty value in a not-null field.
  virtual Status AppendEmpty() = 0;
  virtual Result<arrow::Array> Finish() = 0;

  const arrow::Field& field() const { return field_; }

 protected:
  explicit ValueBuilder(const arrow::Field& field) : field_(field) {}
  Status Expected(std::string_view what, Cell::Kind got) const;

  const arrow::Field field_;
};

}  // namespace oxbow::text::internal
