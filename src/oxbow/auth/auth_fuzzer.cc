// Fuzzes what a client controls in authentication: the authorization and basic-auth headers and grant strings.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "oxbow/auth/auth.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto credentials = oxbow::auth::ParseBasicCredentials(text);
  if (credentials.ok() && credentials->first.find(':') != std::string::npos) __builtin_trap();
  for (std::string_view scheme : {"Bearer", "Basic"}) {
    auto value = oxbow::auth::AuthorizationValue(text, scheme);
    if (value && value->size() + scheme.size() + 1 != text.size()) __builtin_trap();
  }
  auto grant = oxbow::auth::ParseGrant(text);
  if (grant.ok()) {
    oxbow::auth::User user;
    user.grants.push_back(*grant);
    (void)user.Allows(std::string(text), oxbow::auth::Access::kRead);
  }
  return 0;
}
