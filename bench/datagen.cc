#include "datagen.h"

#include <array>
#include <string_view>

#include "oxbow/arrow/builder.h"
#include "oxbow/arrow/ipc.h"

namespace oxbow::bench {
namespace {

using arrow::DataType;
using arrow::Field;
using arrow::TimeUnit;

// splitmix64: tiny, fast and the same everywhere.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  int64_t Uniform(int64_t low, int64_t high) {  // [low, high)
    return low + static_cast<int64_t>(Next() % static_cast<uint64_t>(high - low));
  }
  double Unit() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  bool IsNull() { return Next() % 100 < 5; }
  // True with probability percent/100; draws nothing when percent is 0.
  bool IsNull(int percent) { return percent > 0 && static_cast<int>(Next() % 100) < percent; }

 private:
  uint64_t state_;
};

// `null_percent` of the values are null (0: not nullable).
template <typename T, typename Gen>
Result<arrow::Array> Numeric(DataType type, int64_t n, Rng* rng, int null_percent, Gen gen) {
  arrow::NumericBuilder<T> builder(std::move(type));
  for (int64_t i = 0; i < n; ++i) {
    if (rng->IsNull(null_percent)) {
      RETURN_NOT_OK(builder.AppendNull());
    } else {
      RETURN_NOT_OK(builder.Append(static_cast<T>(gen(i))));
    }
  }
  return builder.Finish();
}

Result<arrow::Array> Decimals(DataType type, int64_t n, Rng* rng, int64_t low, int64_t high) {
  arrow::FixedSizeBinaryBuilder builder(std::move(type));
  for (int64_t i = 0; i < n; ++i) {
    if (rng->IsNull()) {
      RETURN_NOT_OK(builder.AppendNull());
    } else {
      RETURN_NOT_OK(builder.AppendDecimal(static_cast<__int128>(rng->Uniform(low, high))));
    }
  }
  return builder.Finish();
}

Result<arrow::Array> Bools(int64_t n, Rng* rng) {
  arrow::BooleanBuilder builder;
  for (int64_t i = 0; i < n; ++i) {
    if (rng->IsNull()) {
      RETURN_NOT_OK(builder.AppendNull());
    } else {
      RETURN_NOT_OK(builder.Append(rng->Next() & 1));
    }
  }
  return builder.Finish();
}

Result<arrow::Array> Strings(DataType type, int64_t n, Rng* rng, int min_len, int max_len,
                             bool text) {
  static constexpr char kLetters[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  arrow::BinaryBuilder builder(std::move(type));
  std::string value;
  for (int64_t i = 0; i < n; ++i) {
    if (rng->IsNull()) {
      RETURN_NOT_OK(builder.AppendNull());
      continue;
    }
    value.resize(static_cast<size_t>(rng->Uniform(min_len, max_len + 1)));
    for (char& c : value) {
      uint64_t r = rng->Next();
      c = text ? kLetters[r % 36] : static_cast<char>(r & 0xFF);
    }
    RETURN_NOT_OK(builder.Append(value));
  }
  return builder.Finish();
}

Result<arrow::Array> Countries(int64_t n, Rng* rng) {
  static constexpr std::array<const char*, 10> kCountries = {"us", "de", "fr", "jp", "br",
                                                             "in", "cn", "gb", "ca", "au"};
  arrow::BinaryBuilder builder(DataType::String());
  for (int64_t i = 0; i < n; ++i) {
    if (rng->IsNull()) {
      RETURN_NOT_OK(builder.AppendNull());
    } else {
      RETURN_NOT_OK(builder.Append(kCountries[rng->Next() % kCountries.size()]));
    }
  }
  return builder.Finish();
}

// ---- the events dataset ----

constexpr std::array<std::string_view, 96> kWords = {
    "order",    "cart",      "checkout", "payment",  "shipping", "delivery", "return",  "refund",
    "account",  "profile",   "login",    "logout",   "search",   "filter",   "sort",    "page",
    "product",  "item",      "price",    "discount", "coupon",   "gift",     "card",    "wallet",
    "shoes",    "shirt",     "jacket",   "dress",    "watch",    "phone",    "laptop",  "camera",
    "kitchen",  "garden",    "outdoor",  "sports",   "books",    "music",    "movies",  "games",
    "red",      "blue",      "green",    "black",    "white",    "small",    "medium",  "large",
    "new",      "sale",      "best",     "seller",   "limited",  "edition",  "premium", "basic",
    "fast",     "free",      "express",  "standard", "weekend",  "holiday",  "summer",  "winter",
    "the",      "a",         "and",      "with",     "for",      "from",     "to",      "of",
    "customer", "asked",     "about",    "was",      "happy",    "late",     "early",   "again",
    "please",   "thanks",    "great",    "quality",  "size",     "color",    "fits",    "well",
    "stock",    "warehouse", "store",    "online",   "mobile",   "app",      "review",  "rating",
};
constexpr std::array<std::string_view, 10> kEventTypes = {
    "page_view", "click",    "search", "add_to_cart", "remove_from_cart",
    "checkout",  "purchase", "refund", "login",       "logout"};
constexpr std::array<std::string_view, 12> kEventCountries = {"us", "de", "fr", "jp", "br", "in",
                                                              "cn", "gb", "ca", "au", "es", "it"};
constexpr std::array<std::string_view, 6> kCurrencies = {"USD", "EUR", "JPY", "BRL", "INR", "GBP"};
constexpr std::array<std::string_view, 6> kPlatforms = {
    "Windows NT 10.0; Win64; x64", "Macintosh; Intel Mac OS X 14_5",
    "X11; Linux x86_64",           "iPhone; CPU iPhone OS 17_5 like Mac OS X",
    "Linux; Android 14; Pixel 8",  "iPad; CPU OS 17_5 like Mac OS X"};
constexpr std::array<std::string_view, 4> kBrowsers = {"Chrome", "Firefox", "Safari", "Edg"};
constexpr std::array<std::string_view, 5> kReferrers = {
    "https://www.search.example/results?q=", "https://news.example.org/article/",
    "https://social.example.net/share/",
    "https://mail.example.com/click?campaign=", "https://partner.example.io/deals/"};

template <size_t N>
std::string_view Pick(const std::array<std::string_view, N>& values, Rng* rng) {
  return values[rng->Next() % N];
}

// Words of kWords joined by `separator`, cut to a length drawn from [min_len, max_len].
std::string Words(Rng* rng, int min_len, int max_len, char separator) {
  const auto length = static_cast<size_t>(rng->Uniform(min_len, max_len + 1));
  std::string text;
  while (text.size() < length) {
    if (!text.empty()) text += separator;
    text += Pick(kWords, rng);
  }
  text.resize(length);
  return text;
}

// A string column whose non-null values come from `gen()`.
template <typename Gen>
Result<arrow::Array> Texts(int64_t n, Rng* rng, int null_percent, Gen gen) {
  arrow::BinaryBuilder builder(DataType::String());
  for (int64_t i = 0; i < n; ++i) {
    if (rng->IsNull(null_percent)) {
      RETURN_NOT_OK(builder.AppendNull());
    } else {
      RETURN_NOT_OK(builder.Append(gen()));
    }
  }
  return builder.Finish();
}

// Appends a generated column, or passes on its generator's error.
Status AppendColumn(std::vector<arrow::Array>* columns, Result<arrow::Array> column) {
  RETURN_NOT_OK(column.status());
  columns->push_back(std::move(*column));
  return Status::OK();
}

}  // namespace

arrow::SchemaPtr BenchSchema() {
  static const arrow::SchemaPtr schema = std::make_shared<const arrow::Schema>(std::vector<Field>{
      {"id", DataType::Int64(), false},
      {"ts", DataType::Timestamp(TimeUnit::kMicro, "UTC"), false},
      {"user_id", DataType::Int32()},
      {"i8", DataType::Int8()},
      {"i16", DataType::Int16()},
      {"u32", DataType::UInt32()},
      {"u64", DataType::UInt64()},
      {"f32", DataType::Float32()},
      {"f64", DataType::Float64()},
      {"price", DataType::Float64()},
      {"amount", DataType::Decimal128(18, 2)},
      {"tax", DataType::Decimal128(10, 2)},
      {"ok", DataType::Bool()},
      {"flag", DataType::Bool()},
      {"name", DataType::String()},
      {"country", DataType::String()},
      {"url", DataType::String()},
      {"payload", DataType::Binary()},
      {"day", DataType::Date32()},
      {"ts_ms", DataType::Timestamp(TimeUnit::kMilli)},
  });
  return schema;
}

Result<arrow::RecordBatchPtr> MakeBenchBatch(int64_t index, int64_t rows, uint64_t seed) {
  Rng rng(seed * 0x100000001B3ull + static_cast<uint64_t>(index));
  const int64_t first_id = index * rows;
  constexpr int64_t kBaseMicros = 1'700'000'000'000'000;
  std::vector<arrow::Array> columns;
  auto add = [&columns](Result<arrow::Array> column) {
    return AppendColumn(&columns, std::move(column));
  };
  auto ts = [&](int64_t i) { return kBaseMicros + (first_id + i) * 1000; };
  RETURN_NOT_OK(add(
      Numeric<int64_t>(DataType::Int64(), rows, &rng, 0, [&](int64_t i) { return first_id + i; })));
  RETURN_NOT_OK(add(Numeric<int64_t>(DataType::Timestamp(TimeUnit::kMicro, "UTC"), rows, &rng, 0,
                                     [&](int64_t i) { return ts(i) + rng.Uniform(0, 1000); })));
  RETURN_NOT_OK(add(Numeric<int32_t>(DataType::Int32(), rows, &rng, 5,
                                     [&](int64_t) { return rng.Uniform(0, 1'000'000); })));
  RETURN_NOT_OK(add(Numeric<int8_t>(DataType::Int8(), rows, &rng, 5,
                                    [&](int64_t) { return rng.Uniform(-128, 128); })));
  RETURN_NOT_OK(add(Numeric<int16_t>(DataType::Int16(), rows, &rng, 5,
                                     [&](int64_t) { return rng.Uniform(-30000, 30000); })));
  RETURN_NOT_OK(add(Numeric<uint32_t>(DataType::UInt32(), rows, &rng, 5,
                                      [&](int64_t) { return rng.Next() >> 32; })));
  RETURN_NOT_OK(add(Numeric<uint64_t>(DataType::UInt64(), rows, &rng, 5,
                                      [&](int64_t) { return rng.Next() >> 1; })));
  RETURN_NOT_OK(add(Numeric<float>(DataType::Float32(), rows, &rng, 5,
                                   [&](int64_t) { return rng.Unit() * 2 - 1; })));
  RETURN_NOT_OK(add(Numeric<double>(DataType::Float64(), rows, &rng, 5,
                                    [&](int64_t) { return (rng.Unit() - 0.5) * 1e6; })));
  RETURN_NOT_OK(add(Numeric<double>(DataType::Float64(), rows, &rng, 5, [&](int64_t) {
    return static_cast<double>(rng.Uniform(0, 100000)) / 100.0;
  })));
  RETURN_NOT_OK(add(Decimals(DataType::Decimal128(18, 2), rows, &rng, -1'000'000'000'000'000,
                             1'000'000'000'000'000)));
  RETURN_NOT_OK(add(Decimals(DataType::Decimal128(10, 2), rows, &rng, 0, 100'000'000)));
  RETURN_NOT_OK(add(Bools(rows, &rng)));
  RETURN_NOT_OK(add(Bools(rows, &rng)));
  RETURN_NOT_OK(add(Strings(DataType::String(), rows, &rng, 5, 15, true)));
  RETURN_NOT_OK(add(Countries(rows, &rng)));
  RETURN_NOT_OK(add(Strings(DataType::String(), rows, &rng, 20, 60, true)));
  RETURN_NOT_OK(add(Strings(DataType::Binary(), rows, &rng, 8, 32, false)));
  RETURN_NOT_OK(add(Numeric<int32_t>(DataType::Date32(), rows, &rng, 5,
                                     [&](int64_t) { return 19000 + rng.Uniform(0, 1000); })));
  RETURN_NOT_OK(add(Numeric<int64_t>(DataType::Timestamp(TimeUnit::kMilli), rows, &rng, 5,
                                     [&](int64_t i) { return ts(i) / 1000; })));
  return arrow::RecordBatch::Make(BenchSchema(), rows, std::move(columns));
}

Status WriteBenchFile(const std::string& path, int64_t num_batches, int64_t rows, uint64_t seed) {
  ASSIGN_OR_RAISE(auto sink, arrow::ipc::FileSink::Open(*PosixFileSystem::Default(), path));
  ASSIGN_OR_RAISE(auto writer, arrow::ipc::FileWriter::Open(sink, BenchSchema()));
  for (int64_t i = 0; i < num_batches; ++i) {
    ASSIGN_OR_RAISE(auto batch, MakeBenchBatch(i, rows, seed));
    RETURN_NOT_OK(writer->WriteRecordBatch(*batch));
  }
  return writer->Close();
}

arrow::SchemaPtr EventsSchema() {
  static const arrow::SchemaPtr schema = std::make_shared<const arrow::Schema>(std::vector<Field>{
      {"event_id", DataType::Int64(), false},
      {"event_time", DataType::Timestamp(TimeUnit::kMicro, "UTC"), false},
      {"user_id", DataType::Int64()},
      {"item_id", DataType::Int32()},
      {"quantity", DataType::Int32()},
      {"price", DataType::Float64()},
      {"country", DataType::String()},
      {"currency", DataType::String()},
      {"event_type", DataType::String()},
      {"url", DataType::String()},
      {"session_id", DataType::Int64()},
      {"discount", DataType::Float64()},
      {"latitude", DataType::Float64()},
      {"longitude", DataType::Float64()},
      {"device", DataType::String()},
      {"referrer", DataType::String()},
      {"page_title", DataType::String()},
      {"search_query", DataType::String()},
      {"tags", DataType::String()},
      {"comment", DataType::String()},
  });
  return schema;
}

Result<arrow::RecordBatchPtr> MakeEventsBatch(int64_t index, int64_t rows, uint64_t seed) {
  Rng rng(seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(index));
  const int64_t first_id = index * rows;
  constexpr int64_t kBaseMicros = 1'700'000'000'000'000;
  std::vector<arrow::Array> columns;
  auto add = [&columns](Result<arrow::Array> column) {
    return AppendColumn(&columns, std::move(column));
  };
  RETURN_NOT_OK(add(
      Numeric<int64_t>(DataType::Int64(), rows, &rng, 0, [&](int64_t i) { return first_id + i; })));
  RETURN_NOT_OK(add(Numeric<int64_t>(
      DataType::Timestamp(TimeUnit::kMicro, "UTC"), rows, &rng, 0,
      [&](int64_t i) { return kBaseMicros + (first_id + i) * 100 + rng.Uniform(0, 100); })));
  RETURN_NOT_OK(add(Numeric<int64_t>(DataType::Int64(), rows, &rng, 1,
                                     [&](int64_t) { return rng.Uniform(0, 50'000'000); })));
  RETURN_NOT_OK(add(Numeric<int32_t>(DataType::Int32(), rows, &rng, 0,
                                     [&](int64_t) { return rng.Uniform(0, 2'000'000); })));
  RETURN_NOT_OK(add(Numeric<int32_t>(DataType::Int32(), rows, &rng, 0,
                                     [&](int64_t) { return rng.Uniform(1, 11); })));
  RETURN_NOT_OK(add(Numeric<double>(DataType::Float64(), rows, &rng, 0, [&](int64_t) {
    return static_cast<double>(rng.Uniform(99, 500'000)) / 100.0;
  })));
  RETURN_NOT_OK(add(Texts(rows, &rng, 0, [&] { return Pick(kEventCountries, &rng); })));
  RETURN_NOT_OK(add(Texts(rows, &rng, 0, [&] { return Pick(kCurrencies, &rng); })));
  RETURN_NOT_OK(add(Texts(rows, &rng, 0, [&] { return Pick(kEventTypes, &rng); })));
  RETURN_NOT_OK(add(Texts(rows, &rng, 0, [&] {
    return "https://shop.example.com/" + std::string(Pick(kWords, &rng)) + "/" +
           Words(&rng, 20, 60, '-') + "?item=" + std::to_string(rng.Uniform(0, 2'000'000)) +
           "&ref=" + std::string(Pick(kWords, &rng));
  })));
  RETURN_NOT_OK(add(Numeric<int64_t>(DataType::Int64(), rows, &rng, 0,
                                     [&](int64_t) { return static_cast<int64_t>(rng.Next()); })));
  RETURN_NOT_OK(add(Numeric<double>(DataType::Float64(), rows, &rng, 60, [&](int64_t) {
    return static_cast<double>(rng.Uniform(1, 51)) / 100.0;
  })));
  RETURN_NOT_OK(add(Numeric<double>(DataType::Float64(), rows, &rng, 5,
                                    [&](int64_t) { return rng.Unit() * 180 - 90; })));
  RETURN_NOT_OK(add(Numeric<double>(DataType::Float64(), rows, &rng, 5,
                                    [&](int64_t) { return rng.Unit() * 360 - 180; })));
  RETURN_NOT_OK(add(Texts(rows, &rng, 2, [&] {
    return "Mozilla/5.0 (" + std::string(Pick(kPlatforms, &rng)) +
           ") AppleWebKit/537.36 (KHTML, like Gecko) " + std::string(Pick(kBrowsers, &rng)) + "/" +
           std::to_string(rng.Uniform(100, 131)) + ".0." + std::to_string(rng.Uniform(1000, 7000)) +
           ".0";
  })));
  RETURN_NOT_OK(add(Texts(rows, &rng, 10, [&] {
    return std::string(Pick(kReferrers, &rng)) + Words(&rng, 10, 50, '+');
  })));
  RETURN_NOT_OK(add(Texts(rows, &rng, 0, [&] { return Words(&rng, 30, 90, ' '); })));
  RETURN_NOT_OK(add(Texts(rows, &rng, 30, [&] { return Words(&rng, 5, 40, ' '); })));
  RETURN_NOT_OK(add(Texts(rows, &rng, 0, [&] { return Words(&rng, 80, 200, ','); })));
  RETURN_NOT_OK(add(Texts(rows, &rng, 0, [&] { return Words(&rng, 250, 550, ' '); })));
  return arrow::RecordBatch::Make(EventsSchema(), rows, std::move(columns));
}

}  // namespace oxbow::bench
