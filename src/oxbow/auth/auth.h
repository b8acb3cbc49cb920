// Users, passwords and per-table permissions of oxbowd (docs/security.md): the users file of a
// data dir, salted PBKDF2 password hashes, and the bearer tokens the Flight handshake issues.
// OpenSSL stays inside this module.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
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
// Parses "<tables>=<read|write|admin>"; the tables are checked by ValidateGrantTables.
Result<Grant> ParseGrant(std::string_view text);
// Invalid unless `tables` is "*", "ns.*" or "ns.t" with namespace and table names a table can
// have (catalog::ValidateTableName): a grant that could match no table is refused.
Status ValidateGrantTables(std::string_view tables);

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
  // hex; new at every `UserStore::Put`, so it also tells this user from an earlier one of the
  // same name, or from the same user before a password change (tokens are bound to it).
  std::string salt;
  std::string hash;  // hex, PBKDF2-HMAC-SHA256
  int iterations = 0;
  std::vector<Grant> grants;

  // Whether the user may do `access` on table "ns.t".
  bool Allows(const std::string& table, Access access) const;
};

// <data_dir>/users.json: {"users": [{"name", "salt", "hash", "iterations", "grants": [{"tables",
// "access"}]}]}. Written whole and atomically (tmp file, fsync, rename), readable by its owner
// only (0600).
class UserStore {
 public:
  static std::string PathIn(const std::string& data_dir);
  // Loads the file; a missing file is an empty store. Corruption names a malformed user or
  // grant.
  static Result<UserStore> Load(std::shared_ptr<FileSystem> fs, std::string path);
  // Invalid when the users file at `path` may be read by its group or others: it holds the
  // credentials of SCRAM logins (docs/security.md). A missing file is OK.
  static Status CheckPrivate(const std::string& path);

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
// password, whatever the password. A check in flight counts against the limit before its
// outcome is known: at most `max_failures` minus the failures so far are checked at once, and
// further logins of the name wait (up to `queue_wait`, then ResourceExhausted) for their
// outcome, so concurrent guesses cannot outrun the count.
struct LoginLimit {
  int max_failures = 5;                 // default 5
  std::chrono::seconds lockout{30};     // default 30 s
  std::chrono::seconds queue_wait{10};  // default 10 s
};

// The data dir's server secret: 32 random bytes kept in <data_dir>/server.secret (hex, 0600),
// created on first use. It keys what must look random to clients yet stay the same across
// restarts (the made-up SCRAM salts of unknown users, Kafka topic ids).
Result<std::string> LoadOrCreateServerSecret(FileSystem& fs, const std::string& data_dir);
// HMAC-SHA256 of `data` under `key`: 32 bytes.
std::string KeyedHash(std::string_view key, std::string_view data);

// Checks passwords against the users file (re-read when it changes, so `oxbow user` takes
// effect on a running server) and hands out bearer tokens valid for `token_lifetime`. A token
// belongs to one identity of its user (User::salt): removing the user, or giving them a new
// password, ends it, and re-creating the name does not bring it back. `server_secret`
// (LoadOrCreateServerSecret) keys the made-up SCRAM salts; empty: a random one per process.
class Authenticator {
 public:
  Authenticator(std::shared_ptr<FileSystem> fs, std::string users_path,
                std::chrono::seconds token_lifetime = std::chrono::hours(24), LoginLimit limit = {},
                std::string server_secret = {});

  // The user, when the password is theirs; Unauthenticated naming no detail of what was wrong,
  // or ResourceExhausted while the name is locked out (LoginLimit).
  Result<User> CheckPassword(std::string_view user, std::string_view password);
  // A new bearer token for the user (CheckPassword, then a token).
  Result<std::string> Login(std::string_view user, std::string_view password);
  // The user a bearer token belongs to, with their current grants.
  Result<User> Verify(std::string_view token);
  // `user` (logged in earlier) as the users file has them now, with their current grants;
  // Unauthenticated when they were removed or given a new password since (a new salt).
  Result<User> Reload(const User& user);
  // The user an authorization header names: "Bearer <token>" or "Basic base64(user:password)".
  Result<User> VerifyHeader(std::string_view authorization);
  // The user as the users file has them now; std::nullopt when there is no such user.
  Result<std::optional<User>> FindUser(std::string_view name);

  // The LoginLimit shared by every way of logging in (the Flight handshake, REST basic
  // credentials, SASL/PLAIN, SASL/SCRAM): ResourceExhausted while `user` is locked out.
  Status CheckNotLockedOut(std::string_view user);
  // Runs `check` (a password or proof check of `user`) as one login attempt under the
  // LoginLimit: refused while the name is locked out, waiting while its checks in flight use
  // up what is left before the lockout. Unauthenticated from `check` counts as a failed login,
  // OK clears the count, any other error counts as neither.
  Status GuardLogin(std::string_view user, const std::function<Status()>& check);
  // The made-up salt (hex) SCRAM hands an unknown user: keyed by the server secret, so the same
  // across attempts and restarts, like a real user's.
  std::string MadeUpSalt(std::string_view user) const;

 private:
  Result<UserStore> Users();
  Status Admit(const std::string& key);
  void Finish(const std::string& key, const Status& outcome);

  std::shared_ptr<FileSystem> fs_;
  const std::string users_path_;
  const std::chrono::seconds token_lifetime_;
  std::mutex mu_;
  struct Session {
    std::string user;
    std::string salt;  // the identity of the user the token was issued to
    std::chrono::steady_clock::time_point expires;
  };
  std::unordered_map<std::string, Session> sessions_;  // guarded by mu_
  const LoginLimit limit_;
  const std::string server_secret_;
  struct Failures {
    int count = 0;      // failed logins in a row
    int in_flight = 0;  // checks admitted and not yet finished
    std::chrono::steady_clock::time_point locked_until{};
  };
  std::unordered_map<std::string, Failures> failures_;  // by user name; guarded by mu_
  std::condition_variable login_finished_;              // a check of some name finished
};

// The server side of one SCRAM-SHA-256 exchange (RFC 5802, RFC 7677) against the users file.
// users.json's `hash` is SCRAM's SaltedPassword: PBKDF2-HMAC-SHA256 of the password, with the
// salt's hex text as the salt and the user's iterations, so every user can log in this way.
// Channel binding is not offered; an unknown user gets a made-up salt and fails at the proof.
// Proofs are checked under the same LoginLimit as passwords elsewhere.
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
