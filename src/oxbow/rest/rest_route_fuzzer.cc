// Fuzzes the REST catalog's own parsing of untrusted bytes: the method and raw request path
// (percent-decoding, namespace splitting, routing). The first byte picks the method.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "oxbow/rest/route_internal.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static constexpr std::string_view kMethods[] = {"GET", "HEAD", "POST", "DELETE", "PUT"};
  const std::string_view method = kMethods[data[0] % 5];
  const std::string_view path(reinterpret_cast<const char*>(data + 1), size - 1);
  auto route = oxbow::rest::ParseRoute(method, path);
  if (route.ok()) {
    for (const auto& part : route->namespace_parts) {
      if (part.empty()) __builtin_trap();  // empty parts must be refused
    }
  }
  (void)oxbow::rest::SplitNamespace(path);
  return 0;
}
