// Users, passwords and per-table permissions of oxbowd (docs/security.md): the users file of a
// data dir, salted PBKDF2 password hashes, and the bearer tokens the Flight handshake issues.
// OpenSSL stays inside this module.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "oxbow/common/file_system.h"
#include "oxbow/common/status.h"

namespace oxbow::auth {

// What a grant allows; each level includes the ones before it.
enum class Access { kRead, kWrite, kAdmin };
std::string_view AccessName(Access access);
Result<Access> ParseAccess(std::string_view name);

// "ns.t", "ns.*" or "*", with the access it gives.
struct Grant {
  std::string tables;
  Access access = Access::kRead;
};
// Parses "<tables>=<read|write|admin>".
Result<Grant> ParseGrant(std::string_view text);

// The (user, password) of HTTP basic auth: base64 of "user:password" (RFC 7617).
// Unauthenticated naming the problem otherwise.
Result<std::pair<std::string, std::string>> ParseBasicCredentials(std::string_view base64);
// The other way: base64 of "user:password", for an "authorization: Basic ..." header.
std::string EncodeBasicCredentials(std::string_view user, std::string_view password);

// What follows `scheme` ("Bearer", "Basic") and a space in an authorization header; the scheme
// is matched without regard to case (RFC 9110). nullopt for another scheme or nothing after it.
std::optional<std::string_view> AuthorizationValue(std::string_view header,
                                                   std::string_view scheme);

// The (user, password) of a SASL/PLAIN message: [authzid] NUL user NUL password (RFC 4616);
// an authorization identity must be the user. Unauthenticated naming the problem otherwise.
Result<std::pair<std::string, std::string>> ParseSaslPlain(std::string_view message);

struct User {
  std::string name;
  std::string salt;  // hex
  std::string hash;  // hex, PBKDF2-HMAC-SHA256
  int iterations = 0;
  std::vector<Grant> grants;

  // Whether the user may do `access` on table "ns.t".
  bool Allows(const std::string& table, Access access) const;
};

// <data_dir>/users.json: {"users": [{"name", "salt", "hash", "iterations", "grants": [{"tables",
// "access"}]}]}. Written whole and atomically (tmp file, fsync, rename).
class UserStore {
 public:
  static std::string PathIn(const std::string& data_dir);
  // Loads the file; a missing file is an empty store.
  static Result<UserStore> Load(std::shared_ptr<FileSystem> fs, std::string path);

  const std::vector<User>& users() const { return users_; }
  const User* Find(std::string_view name) const;
  // Adds a user, or replaces the password and grants of an existing one.
  Status Put(const std::string& name, std::string_view password, std::vector<Grant> grants);
  Status Remove(const std::string& name);
  Status Save() const;

 private:
  std::shared_ptr<FileSystem> fs_;
  std::string path_;
  std::vector<User> users_;
};

// Brute-force protection: after `max_failures` wrong passwords in a row for one user name
// (existing or not), that name's logins are refused for `lockout`, without checking the
// password, whatever the password.
struct LoginLimit {
  int max_failures = 5;              // default 5
  std::chrono::seconds lockout{30};  // default 30 s
};

// Checks passwords against the users file (re-read when it changes, so `oxbow user` takes
// effect on a running server) and hands out bearer tokens valid for `token_lifetime`.
class Authenticator {
 public:
  Authenticator(std::shared_ptr<FileSystem> fs, std::string users_path,
                std::chrono::seconds token_lifetime = std::chrono::hours(24),
                LoginLimit limit = {});

  // The user, when the password is theirs; Unauthenticated naming no detail of what was wrong,
  // or ResourceExhausted while the name is locked out (LoginLimit).
  Result<User> CheckPassword(std::string_view user, std::string_view password);
  // A new bearer token for the user (CheckPassword, then a token).
  Result<std::string> Login(std::string_view user, std::string_view password);
  // The user a bearer token belongs to, with their current grants.
  Result<User> Verify(std::string_view token);
  // The user an authorization header names: "Bearer <token>" or "Basic base64(user:password)".
  Result<User> VerifyHeader(std::string_view authorization);
  // The user as the users file has them now; std::nullopt when there is no such user.
  Result<std::optional<User>> FindUser(std::string_view name);

  // The LoginLimit shared by every way of logging in (the Flight handshake, REST basic
  // credentials, SASL/PLAIN, SASL/SCRAM): ResourceExhausted while `user` is locked out.
  Status CheckNotLockedOut(std::string_view user);
  // Counts a failed login of `user` (locking the name out at the limit), or clears its count.
  void RecordLogin(std::string_view user, bool succeeded);

 private:
  Result<UserStore> Users();

  std::shared_ptr<FileSystem> fs_;
  const std::string users_path_;
  const std::chrono::seconds token_lifetime_;
  std::mutex mu_;
  struct Session {
    std::string user;
    std::chrono::steady_clock::time_point expires;
  };
  std::unordered_map<std::string, Session> sessions_;  // guarded by mu_
  const LoginLimit limit_;
  struct Failures {
    int count = 0;
    std::chrono::steady_clock::time_point locked_until{};
  };
  std::unordered_map<std::string, Failures> failures_;  // by user name; guarded by mu_
};

// The server side of one SCRAM-SHA-256 exchange (RFC 5802, RFC 7677) against the users file.
// users.json's `hash` is SCRAM's SaltedPassword: PBKDF2-HMAC-SHA256 of the password, with the
// salt's hex text as the salt and the user's iterations, so every user can log in this way.
// Channel binding is not offered; an unknown user gets a made-up salt and fails at the proof.
// Failed proofs count towards the same lockout as wrong passwords elsewhere (LoginLimit).
class ScramSha256Server {
 public:
  explicit ScramSha256Server(Authenticator* authenticator) : authenticator_(authenticator) {}

  // client-first-message in, server-first-message out.
  Result<std::string> ClientFirst(std::string_view message);
  // client-final-message in: the server-final-message and the user when the proof is right,
  // else Unauthenticated. Both steps refuse a name locked out by the Authenticator's
  // LoginLimit (ResourceExhausted), and a wrong proof counts as a failed login.
  Result<std::pair<std::string, User>> ClientFinal(std::string_view message);

 private:
  Result<std::pair<std::string, User>> CheckProof(std::string_view message);

  Authenticator* authenticator_;
  std::string name_;
  std::string gs2_header_;
  std::string client_first_bare_;
  std::string server_first_;
  std::string nonce_;
  std::optional<User> user_;
  bool first_done_ = false;
  bool final_done_ = false;
};

}  // namespace oxbow::auth
