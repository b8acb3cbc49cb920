// Fuzzes what a registry client controls: a request path (percent-decoding into segments) and
// Avro schemas (parsing, normalizing, resolving one against another). Input: path NUL schema
// NUL schema.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "oxbow/registry/registry_internal.h"

using oxbow::registry::internal::AvroSchema;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t first = input.find('\0');
  const std::string path(input.substr(0, first));
  (void)oxbow::http::PathSegments("/" + path);
  if (first == std::string_view::npos) return 0;
  const std::string_view rest = input.substr(first + 1);
  const size_t second = rest.find('\0');
  auto a = AvroSchema::Parse(rest.substr(0, second));
  if (!a.ok() && a.status().message().empty()) __builtin_trap();  // errors say why
  if (a.ok()) {
    // The normalized form is a schema, and normalizing it again changes nothing.
    auto again = AvroSchema::Parse(a->canonical());
    if (!again.ok() || again->canonical() != a->canonical()) __builtin_trap();
    (void)ReadProblems(*a, *a);
  }
  if (second == std::string_view::npos || !a.ok()) return 0;
  auto b = AvroSchema::Parse(rest.substr(second + 1));
  if (b.ok()) {
    (void)ReadProblems(*a, *b);
    (void)ReadProblems(*b, *a);
  }
  return 0;
}
