// Fuzzes what a client controls in authentication: the authorization and basic-auth headers,
// grant strings, SASL PLAIN messages and the two client messages of SCRAM-SHA-256 (against an
// empty users file).
#include <cstddef>
#include <cstdint>
#include <string>
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
  auto plain = oxbow::auth::ParseSaslPlain(text);
  if (plain.ok() && plain->first.find('\0') != std::string::npos) __builtin_trap();
  static oxbow::auth::Authenticator authenticator(oxbow::PosixFileSystem::Default(),
                                                  "/nonexistent/users.json");
  // The input split at its first newline: client-first, client-final.
  const size_t split = text.find('\n');
  oxbow::auth::ScramSha256Server scram(&authenticator);
  if (scram.ClientFirst(text.substr(0, split)).ok() && split != std::string_view::npos) {
    // No user exists, so no proof may pass.
    if (scram.ClientFinal(text.substr(split + 1)).ok()) __builtin_trap();
  }
  return 0;
}
