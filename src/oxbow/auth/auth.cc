#include "oxbow/auth/auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

namespace oxbow::auth {

namespace {

using nlohmann::json;

constexpr int kIterations = 100'000;
constexpr size_t kHashBytes = 32;

std::string Hex(const unsigned char* bytes, size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    out.push_back(kDigits[bytes[i] >> 4]);
    out.push_back(kDigits[bytes[i] & 15]);
  }
  return out;
}

Result<std::string> RandomHex(size_t bytes) {
  std::vector<unsigned char> buf(bytes);
  if (RAND_bytes(buf.data(), static_cast<int>(bytes)) != 1) {
    return Status::Internal("the system has no randomness to spare (RAND_bytes failed)");
  }
  return Hex(buf.data(), bytes);
}

Result<std::string> Pbkdf2(std::string_view password, const std::string& salt, int iterations) {
  unsigned char out[kHashBytes];
  if (PKCS5_PBKDF2_HMAC(password.data(), static_cast<int>(password.size()),
                        reinterpret_cast<const unsigned char*>(salt.data()),
                        static_cast<int>(salt.size()), iterations, EVP_sha256(), kHashBytes,
                        out) != 1) {
    return Status::Internal("PBKDF2 failed");
  }
  return Hex(out, kHashBytes);
}

bool TablesMatch(const std::string& pattern, const std::string& table) {
  if (pattern == "*") return true;
  if (pattern.size() >= 2 && pattern.compare(pattern.size() - 2, 2, ".*") == 0) {
    return table.compare(0, pattern.size() - 1, pattern, 0, pattern.size() - 1) == 0;
  }
  return pattern == table;
}

Status CheckName(const std::string& name) {
  if (name.empty() || name.size() > 128 || !std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' ||
               c == '@';
      })) {
    return Status::Invalid("user name " + Quote(name) +
                           " must be 1-128 letters, digits, '_', '-', '.' or '@'");
  }
  return Status::OK();
}

}  // namespace

std::string_view AccessName(Access access) {
  switch (access) {
    case Access::kRead: return "read";
    case Access::kWrite: return "write";
    case Access::kAdmin: return "admin";
  }
  return "read";
}

Result<Access> ParseAccess(std::string_view name) {
  if (name == "read") return Access::kRead;
  if (name == "write") return Access::kWrite;
  if (name == "admin") return Access::kAdmin;
  return Status::Invalid("access " + Quote(name) + " is unknown (known: read, write, admin)");
}

Result<Grant> ParseGrant(std::string_view text) {
  const auto eq = text.rfind('=');
  if (eq == std::string_view::npos || eq == 0) {
    return Status::Invalid("grant " + Quote(text) +
                           " must be <tables>=<read|write|admin>, e.g. shop.*=write");
  }
  Grant grant;
  grant.tables = std::string(text.substr(0, eq));
  ASSIGN_OR_RAISE(grant.access, ParseAccess(text.substr(eq + 1)));
  const bool wildcard =
      grant.tables == "*" ||
      (grant.tables.size() > 2 && grant.tables.compare(grant.tables.size() - 2, 2, ".*") == 0 &&
       grant.tables.find('.') == grant.tables.size() - 2);
  if (!wildcard && std::count(grant.tables.begin(), grant.tables.end(), '.') != 1) {
    return Status::Invalid("grant " + Quote(text) + " must name \"ns.t\", \"ns.*\" or \"*\"");
  }
  return grant;
}

Result<std::pair<std::string, std::string>> ParseBasicCredentials(std::string_view base64) {
  if (base64.empty() || base64.size() % 4 != 0 || base64.size() > 4096) {
    return Status::Unauthenticated("basic auth credentials must be base64(user:password)");
  }
  std::string decoded(base64.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(decoded.data()),
                                reinterpret_cast<const unsigned char*>(base64.data()),
                                static_cast<int>(base64.size()));
  if (n < 0) return Status::Unauthenticated("basic auth credentials are not base64");
  // EVP_DecodeBlock counts the padding (at most "==") as zero bytes.
  size_t padding = 0;
  while (padding < 2 && base64[base64.size() - 1 - padding] == '=') ++padding;
  if (static_cast<size_t>(n) < padding || base64.find('=') < base64.size() - padding) {
    return Status::Unauthenticated("basic auth credentials are not base64");
  }
  decoded.resize(static_cast<size_t>(n) - padding);
  const auto colon = decoded.find(':');
  if (colon == std::string::npos) {
    return Status::Unauthenticated("basic auth credentials must be base64(user:password)");
  }
  return std::make_pair(decoded.substr(0, colon), decoded.substr(colon + 1));
}

std::string EncodeBasicCredentials(std::string_view user, std::string_view password) {
  const std::string plain = std::string(user) + ":" + std::string(password);
  std::string out(4 * ((plain.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(plain.data()),
                                static_cast<int>(plain.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

std::optional<std::string_view> AuthorizationValue(std::string_view header,
                                                   std::string_view scheme) {
  if (header.size() <= scheme.size() + 1 || header[scheme.size()] != ' ') return std::nullopt;
  for (size_t i = 0; i < scheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(header[i])) !=
        std::tolower(static_cast<unsigned char>(scheme[i]))) {
      return std::nullopt;
    }
  }
  return header.substr(scheme.size() + 1);
}

bool User::Allows(const std::string& table, Access access) const {
  return std::any_of(grants.begin(), grants.end(), [&](const Grant& g) {
    return g.access >= access && TablesMatch(g.tables, table);
  });
}

std::string UserStore::PathIn(const std::string& data_dir) {
  return JoinPath(data_dir, "users.json");
}

Result<UserStore> UserStore::Load(std::shared_ptr<FileSystem> fs, std::string path) {
  UserStore store;
  store.fs_ = std::move(fs);
  store.path_ = std::move(path);
  auto bytes = ReadWholeFile(*store.fs_, store.path_);
  if (!bytes.ok()) {
    if (bytes.status().IsNotFound()) return store;
    return bytes.status();
  }
  json j = json::parse((*bytes)->view(), nullptr, /*allow_exceptions=*/false);
  auto bad = [&](const std::string& why) {
    return Status::Corruption("users file " + store.path_ + ": " + why);
  };
  if (j.is_discarded() || !j.is_object() || !j.contains("users") || !j["users"].is_array()) {
    return bad("not {\"users\": [...]}");
  }
  for (const auto& u : j["users"]) {
    if (!u.is_object() || !u.value("name", json()).is_string() ||
        !u.value("salt", json()).is_string() || !u.value("hash", json()).is_string() ||
        !u.value("iterations", json()).is_number_integer() ||
        !u.value("grants", json()).is_array()) {
      return bad("a user lacks name, salt, hash, iterations or grants");
    }
    User user{u["name"], u["salt"], u["hash"], u["iterations"].get<int>(), {}};
    for (const auto& g : u["grants"]) {
      if (!g.is_object() || !g.value("tables", json()).is_string() ||
          !g.value("access", json()).is_string()) {
        return bad("a grant of " + Quote(user.name) + " lacks tables or access");
      }
      auto access = ParseAccess(g["access"].get<std::string>());
      if (!access.ok()) return bad(access.status().message());
      user.grants.push_back({g["tables"].get<std::string>(), *access});
    }
    store.users_.push_back(std::move(user));
  }
  return store;
}

const User* UserStore::Find(std::string_view name) const {
  for (const auto& u : users_) {
    if (u.name == name) return &u;
  }
  return nullptr;
}

Status UserStore::Put(const std::string& name, std::string_view password,
                      std::vector<Grant> grants) {
  RETURN_NOT_OK(CheckName(name));
  if (password.size() < 8) return Status::Invalid("a password needs at least 8 characters");
  User user;
  user.name = name;
  ASSIGN_OR_RAISE(user.salt, RandomHex(16));
  user.iterations = kIterations;
  ASSIGN_OR_RAISE(user.hash, Pbkdf2(password, user.salt, user.iterations));
  user.grants = std::move(grants);
  users_.erase(
      std::remove_if(users_.begin(), users_.end(), [&](const User& u) { return u.name == name; }),
      users_.end());
  users_.push_back(std::move(user));
  return Status::OK();
}

Status UserStore::Remove(const std::string& name) {
  const auto before = users_.size();
  users_.erase(
      std::remove_if(users_.begin(), users_.end(), [&](const User& u) { return u.name == name; }),
      users_.end());
  if (users_.size() == before) return Status::NotFound("user " + Quote(name) + " does not exist");
  return Status::OK();
}

Status UserStore::Save() const {
  json users = json::array();
  for (const auto& u : users_) {
    json grants = json::array();
    for (const auto& g : u.grants) {
      grants.push_back({{"tables", g.tables}, {"access", std::string(AccessName(g.access))}});
    }
    users.push_back({{"name", u.name},
                     {"salt", u.salt},
                     {"hash", u.hash},
                     {"iterations", u.iterations},
                     {"grants", std::move(grants)}});
  }
  const std::string text = json{{"users", std::move(users)}}.dump(2) + "\n";
  const std::string tmp = path_ + ".tmp";
  {
    ASSIGN_OR_RAISE(auto file, fs_->OpenFile(tmp, FileMode::kCreate));
    RETURN_NOT_OK(file->Truncate(0));
    RETURN_NOT_OK(
        file->WriteAt(0, ByteSpan(reinterpret_cast<const uint8_t*>(text.data()), text.size())));
    RETURN_NOT_OK(file->Sync());
  }
  RETURN_NOT_OK(fs_->Rename(tmp, path_));
  const auto slash = path_.rfind('/');
  return fs_->SyncDir(slash == std::string::npos ? "." : path_.substr(0, slash));
}

Authenticator::Authenticator(std::shared_ptr<FileSystem> fs, std::string users_path,
                             std::chrono::seconds token_lifetime, LoginLimit limit)
    : fs_(std::move(fs)),
      users_path_(std::move(users_path)),
      token_lifetime_(token_lifetime),
      limit_(limit) {}

Result<UserStore> Authenticator::Users() { return UserStore::Load(fs_, users_path_); }

Result<User> Authenticator::CheckPassword(std::string_view name, std::string_view password) {
  const std::string key(name.substr(0, 128));
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto now = std::chrono::steady_clock::now();
    auto it = failures_.find(key);
    if (it != failures_.end() && it->second.locked_until > now) {
      const auto wait =
          std::chrono::ceil<std::chrono::seconds>(it->second.locked_until - now).count();
      return Status::ResourceExhausted("too many failed logins for this user name; retry in " +
                                       std::to_string(wait) + " s");
    }
  }
  ASSIGN_OR_RAISE(auto users, Users());
  const User* user = users.Find(name);
  // The same work and the same answer whether the user exists or not.
  const std::string salt = user ? user->salt : std::string(32, '0');
  ASSIGN_OR_RAISE(std::string hash, Pbkdf2(password, salt, user ? user->iterations : kIterations));
  const bool right = user && hash.size() == user->hash.size() &&
                     CRYPTO_memcmp(hash.data(), user->hash.data(), hash.size()) == 0;
  std::lock_guard<std::mutex> lock(mu_);
  if (right) {
    failures_.erase(key);
    return *user;
  }
  const auto now = std::chrono::steady_clock::now();
  // Names tried once and never again must not pile up: at 10,000, forget the unlocked ones.
  if (failures_.size() >= 10'000) {
    for (auto it = failures_.begin(); it != failures_.end();) {
      it = it->second.locked_until > now ? std::next(it) : failures_.erase(it);
    }
  }
  Failures& failures = failures_[key];
  if (++failures.count >= limit_.max_failures) {
    failures.count = 0;
    failures.locked_until = now + limit_.lockout;
  }
  return Status::Unauthenticated("wrong user name or password");
}

Result<std::string> Authenticator::Login(std::string_view name, std::string_view password) {
  ASSIGN_OR_RAISE(User user, CheckPassword(name, password));
  ASSIGN_OR_RAISE(std::string token, RandomHex(32));
  std::lock_guard<std::mutex> lock(mu_);
  const auto now = std::chrono::steady_clock::now();
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    it = it->second.expires < now ? sessions_.erase(it) : std::next(it);
  }
  sessions_[token] = {user.name, now + token_lifetime_};
  return token;
}

Result<User> Authenticator::Verify(std::string_view token) {
  std::string name;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sessions_.find(std::string(token));
    if (it == sessions_.end() || it->second.expires < std::chrono::steady_clock::now()) {
      return Status::Unauthenticated("the bearer token is unknown or expired; authenticate again");
    }
    name = it->second.user;
  }
  ASSIGN_OR_RAISE(auto users, Users());
  const User* user = users.Find(name);
  if (!user) return Status::Unauthenticated("user " + Quote(name) + " was removed");
  return *user;
}

Result<User> Authenticator::VerifyHeader(std::string_view authorization) {
  if (auto token = AuthorizationValue(authorization, "Bearer")) return Verify(*token);
  if (auto basic = AuthorizationValue(authorization, "Basic")) {
    ASSIGN_OR_RAISE(auto credentials, ParseBasicCredentials(*basic));
    return CheckPassword(credentials.first, credentials.second);
  }
  return Status::Unauthenticated(
      "this server requires authentication: an \"Authorization: Bearer <token>\" header with a "
      "token from the Flight handshake, or \"Authorization: Basic base64(user:password)\"");
}

}  // namespace oxbow::auth
