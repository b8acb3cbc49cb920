#include "oxbow/arrow/utf8.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "oxbow/arrow/builder.h"

namespace oxbow::arrow {
namespace {

// A decoder written differently from ValidUtf8Prefix: decode the code point by its bit
// pattern, then check it is the shortest form, not a surrogate and at most U+10FFFF.
bool ReferenceIsValid(std::string_view text) {
  const auto* p = reinterpret_cast<const uint8_t*>(text.data());
  size_t i = 0;
  while (i < text.size()) {
    const uint8_t b = p[i];
    size_t length;
    uint32_t cp;
    if (b < 0x80) {
      length = 1, cp = b;
    } else if ((b & 0xe0) == 0xc0) {
      length = 2, cp = b & 0x1f;
    } else if ((b & 0xf0) == 0xe0) {
      length = 3, cp = b & 0x0f;
    } else if ((b & 0xf8) == 0xf0) {
      length = 4, cp = b & 0x07;
    } else {
      return false;
    }
    if (i + length > text.size()) return false;
    for (size_t k = 1; k < length; ++k) {
      if ((p[i + k] & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (p[i + k] & 0x3f);
    }
    constexpr uint32_t kShortest[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kShortest[length] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += length;
  }
  return true;
}

std::string Bytes(std::initializer_list<int> bytes) {
  std::string out;
  for (int b : bytes) out.push_back(static_cast<char>(b));
  return out;
}

TEST(Utf8Test, AsciiAtEveryLengthAndPosition) {
  for (size_t n = 0; n <= 150; ++n) {
    std::string text(n, 'a');
    EXPECT_TRUE(IsAscii(reinterpret_cast<const uint8_t*>(text.data()), n)) << n;
    EXPECT_EQ(ValidUtf8Prefix(text), n);
    for (size_t at = 0; at < n; ++at) {
      std::string bad = text;
      bad[at] = static_cast<char>(0x80);
      EXPECT_FALSE(IsAscii(reinterpret_cast<const uint8_t*>(bad.data()), n)) << n << " " << at;
      EXPECT_EQ(ValidUtf8Prefix(bad), at) << n << " " << at;
    }
  }
}

TEST(Utf8Test, BoundaryCodePointsAreValid) {
  const std::vector<std::string> valid = {
      Bytes({0x00}),                    // U+0000
      Bytes({0x7f}),                    // U+007F
      Bytes({0xc2, 0x80}),              // U+0080, the smallest 2-byte form
      Bytes({0xdf, 0xbf}),              // U+07FF
      Bytes({0xe0, 0xa0, 0x80}),        // U+0800, the smallest 3-byte form
      Bytes({0xed, 0x9f, 0xbf}),        // U+D7FF, just below the surrogates
      Bytes({0xee, 0x80, 0x80}),        // U+E000, just above them
      Bytes({0xef, 0xbf, 0xbf}),        // U+FFFF
      Bytes({0xf0, 0x90, 0x80, 0x80}),  // U+10000, the smallest 4-byte form
      Bytes({0xf4, 0x8f, 0xbf, 0xbf}),  // U+10FFFF, the largest code point
      "h\u00e9llo \u65e5\u672c\u8a9e \U0001F680 \U0001D11E",
  };
  for (const auto& text : valid) {
    EXPECT_TRUE(IsValidUtf8(text)) << text;
    EXPECT_TRUE(IsValidUtf8("prefix" + text + "suffix-of-some-length")) << text;
  }
}

TEST(Utf8Test, IllFormedSequencesEndThePrefix) {
  struct Case {
    const char* what;
    std::string bytes;
  };
  const std::vector<Case> cases = {
      {"lone continuation", Bytes({0x80})},
      {"lone continuation bf", Bytes({0xbf})},
      {"ff fe", Bytes({0xff, 0xfe})},
      {"overlong 2-byte C0", Bytes({0xc0, 0x80})},
      {"overlong 2-byte C1", Bytes({0xc1, 0xbf})},
      {"overlong 3-byte", Bytes({0xe0, 0x9f, 0xbf})},
      {"overlong 4-byte", Bytes({0xf0, 0x8f, 0xbf, 0xbf})},
      {"surrogate D800", Bytes({0xed, 0xa0, 0x80})},
      {"surrogate DFFF", Bytes({0xed, 0xbf, 0xbf})},
      {"above U+10FFFF", Bytes({0xf4, 0x90, 0x80, 0x80})},
      {"lead F5", Bytes({0xf5, 0x80, 0x80, 0x80})},
      {"truncated 2-byte", Bytes({0xc3})},
      {"truncated 3-byte", Bytes({0xe2, 0x82})},
      {"truncated 4-byte", Bytes({0xf0, 0x9f, 0x9a})},
      {"ASCII where a continuation belongs", Bytes({0xe2, 0x82, 0x41})},
  };
  for (const auto& c : cases) {
    EXPECT_FALSE(IsValidUtf8(c.bytes)) << c.what;
    // After an ASCII run long enough for the 8-byte steps, the prefix ends where the bad
    // sequence starts.
    const std::string text = "0123456789abc" + c.bytes + "tail";
    EXPECT_EQ(ValidUtf8Prefix(text), 13u) << c.what;
  }
}

TEST(Utf8Test, AgreesWithTheReferenceOnEveryStringOfUpToThreeBytes) {
  std::string text(3, '\0');
  for (int a = 0; a < 256; ++a) {
    EXPECT_EQ(IsValidUtf8(Bytes({a})), ReferenceIsValid(Bytes({a}))) << a;
    for (int b = 0; b < 256; ++b) {
      EXPECT_EQ(IsValidUtf8(Bytes({a, b})), ReferenceIsValid(Bytes({a, b}))) << a << " " << b;
      for (int c = 0; c < 256; ++c) {
        text[0] = static_cast<char>(a);
        text[1] = static_cast<char>(b);
        text[2] = static_cast<char>(c);
        if (IsValidUtf8(text) != ReferenceIsValid(text)) {
          ADD_FAILURE() << "bytes " << a << " " << b << " " << c;
          return;
        }
      }
    }
  }
}

TEST(Utf8Test, AgreesWithTheReferenceOnFourByteSequences) {
  const int tails[] = {0x00, 0x41, 0x7f, 0x80, 0x8f, 0x90, 0xbf, 0xc0, 0xff};
  std::string text(4, '\0');
  for (int a = 0xc0; a < 256; ++a) {
    for (int b = 0; b < 256; ++b) {
      for (int c : tails) {
        for (int d : tails) {
          text[0] = static_cast<char>(a);
          text[1] = static_cast<char>(b);
          text[2] = static_cast<char>(c);
          text[3] = static_cast<char>(d);
          ASSERT_EQ(IsValidUtf8(text), ReferenceIsValid(text)) << a << " " << b << " " << c;
        }
      }
    }
  }
}

Array Strings(const std::vector<std::optional<std::string>>& values) {
  BinaryBuilder builder(DataType::String());
  for (const auto& v : values) {
    Status st = v ? builder.Append(*v) : builder.AppendNull();
    EXPECT_TRUE(st.ok());
  }
  return builder.Finish().ValueOrDie();
}

TEST(Utf8Test, ArrayNamesTheFirstBadRow) {
  EXPECT_TRUE(ValidateUtf8(Strings({})).ok());
  EXPECT_TRUE(ValidateUtf8(Strings({"", std::nullopt, ""})).ok());
  EXPECT_TRUE(ValidateUtf8(Strings({"plain", "ascii", std::nullopt})).ok());
  EXPECT_TRUE(ValidateUtf8(Strings({"caf\u00e9", "\U0001F680", std::nullopt})).ok());
  Status st = ValidateUtf8(Strings({"ok", "\u00e9", Bytes({'a', 0xff, 0xfe}), Bytes({0x80})}));
  EXPECT_TRUE(st.IsInvalid());
  EXPECT_EQ(st.message(), "row 2 is not valid UTF-8 (ill-formed at byte 1 of the value: ff fe)");
}

TEST(Utf8Test, ArrayChecksValuesNotTheBytesBetweenThem) {
  // "\xc3\xa9" split over two values: the bytes form "é", but neither value is valid.
  Array split = Strings({Bytes({0xc3}), Bytes({0xa9})});
  EXPECT_EQ(ValidateUtf8(split).message(),
            "row 0 is not valid UTF-8 (ill-formed at byte 0 of the value: c3)");
  // The bytes under a null slot are not a value.
  auto validity = MutableBuffer::Allocate(1).ValueOrDie();
  validity->mutable_data()[0] = 0b10;  // row 0 null
  Array with_null =
      Array::Make(DataType::String(), 2, {validity, split.buffer(1), split.buffer(2)});
  EXPECT_EQ(ValidateUtf8(with_null).message(),
            "row 1 is not valid UTF-8 (ill-formed at byte 0 of the value: a9)");
  // Bad bytes under a null beside valid multibyte values.
  Array garbage = Strings({"\u00e9", Bytes({0xff}), "\U0001F680"});
  auto row_1_null = MutableBuffer::Allocate(1).ValueOrDie();
  row_1_null->mutable_data()[0] = 0b101;
  Array garbage_null =
      Array::Make(DataType::String(), 3, {row_1_null, garbage.buffer(1), garbage.buffer(2)});
  EXPECT_TRUE(ValidateUtf8(garbage_null).ok());
  // A slice sees only its own rows.
  Array mixed = Strings({Bytes({0xff}), "fine", "\u00e9t\u00e9"});
  EXPECT_FALSE(ValidateUtf8(mixed).ok());
  EXPECT_TRUE(ValidateUtf8(mixed.Slice(1, 2)).ok());
  EXPECT_EQ(ValidateUtf8(Strings({"a", "b", Bytes({0xed, 0xa0, 0x80})}).Slice(1, 2)).message(),
            "row 1 is not valid UTF-8 (ill-formed at byte 0 of the value: ed a0 80)");
}

}  // namespace
}  // namespace oxbow::arrow
