#include "oxbow/auth/auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "oxbow/catalog/descriptor.h"

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

std::string Base64(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

// Strict base64 with padding; std::nullopt when it is not.
std::optional<std::string> DecodeBase64(std::string_view base64) {
  if (base64.size() % 4 != 0 || base64.size() > 4096) return std::nullopt;
  if (base64.empty()) return std::string();
  std::string decoded(base64.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(decoded.data()),
                                reinterpret_cast<const unsigned char*>(base64.data()),
                                static_cast<int>(base64.size()));
  if (n < 0) return std::nullopt;
  // EVP_DecodeBlock counts the padding (at most "==") as zero bytes.
  size_t padding = 0;
  while (padding < 2 && base64[base64.size() - 1 - padding] == '=') ++padding;
  if (static_cast<size_t>(n) < padding || base64.find('=') < base64.size() - padding) {
    return std::nullopt;
  }
  decoded.resize(static_cast<size_t>(n) - padding);
  return decoded;
}

std::optional<std::string> Unhex(std::string_view hex) {
  if (hex.size() % 2 != 0) return std::nullopt;
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  for (size_t i = 0; i < hex.size(); i += 2) {
    const int hi = digit(hex[i]);
    const int lo = digit(hex[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(static_cast<char>(hi * 16 + lo));
  }
  return out;
}

std::string HmacSha256(std::string_view key, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &n);
  return std::string(reinterpret_cast<char*>(out), n);
}

std::string Sha256(std::string_view data) {
  unsigned char out[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), out);
  return std::string(reinterpret_cast<char*>(out), sizeof(out));
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

Status ValidateGrantTables(std::string_view tables) {
  if (tables == "*") return Status::OK();
  const Status valid = tables.ends_with(".*")
                           ? catalog::ValidateNamespace(tables.substr(0, tables.size() - 2))
                           : catalog::ValidateTableName(tables);
  if (valid.ok()) return valid;
  return Status::Invalid("grant tables " + Quote(tables) +
                         " must be \"ns.t\", \"ns.*\" or \"*\": " + valid.message());
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
  RETURN_NOT_OK(ValidateGrantTables(grant.tables));
  return grant;
}

Result<std::pair<std::string, std::string>> ParseBasicCredentials(std::string_view base64) {
  if (base64.empty()) {
    return Status::Unauthenticated("basic auth credentials must be base64(user:password)");
  }
  const std::optional<std::string> decoded = DecodeBase64(base64);
  if (!decoded) return Status::Unauthenticated("basic auth credentials are not base64");
  const auto colon = decoded->find(':');
  if (colon == std::string::npos) {
    return Status::Unauthenticated("basic auth credentials must be base64(user:password)");
  }
  return std::make_pair(decoded->substr(0, colon), decoded->substr(colon + 1));
}

Result<std::pair<std::string, std::string>> ParseSaslPlain(std::string_view message) {
  const size_t first = message.find('\0');
  const size_t second = first == std::string_view::npos ? first : message.find('\0', first + 1);
  if (second == std::string_view::npos ||
      message.find('\0', second + 1) != std::string_view::npos) {
    return Status::Unauthenticated("SASL/PLAIN: expected [authzid] NUL user NUL password");
  }
  const std::string_view authzid = message.substr(0, first);
  std::string user(message.substr(first + 1, second - first - 1));
  if (!authzid.empty() && authzid != user) {
    return Status::Unauthenticated("SASL/PLAIN: the authorization identity must be the user");
  }
  return std::make_pair(std::move(user), std::string(message.substr(second + 1)));
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
      const Status tables = ValidateGrantTables(g["tables"].get<std::string>());
      if (!tables.ok()) return bad("user " + Quote(user.name) + ": " + tables.message());
      user.grants.push_back({g["tables"].get<std::string>(), *access});
    }
    store.users_.push_back(std::move(user));
  }
  return store;
}

Status UserStore::CheckPrivate(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return errno == ENOENT ? Status::OK() : ErrnoToStatus(errno, "stat", path);
  }
  if ((st.st_mode & (S_IRWXG | S_IRWXO)) == 0) return Status::OK();
  char mode[8];
  std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
  return Status::Invalid("the users file " + path + " may be read by others (mode " + mode +
                         "): its hashes are SCRAM credentials; run `chmod 600 " + path + "`");
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
  const auto slash = path_.rfind('/');
  return WriteFileAtomically(*fs_, slash == std::string::npos ? "." : path_.substr(0, slash),
                             path_.substr(slash + 1), text, FileMode::kCreatePrivate);
}

std::string KeyedHash(std::string_view key, std::string_view data) { return HmacSha256(key, data); }

namespace {

// A secret of this process alone, for an Authenticator given none (tests, tools).
std::string ProcessSecret() {
  auto secret = RandomHex(32);
  return secret.ok() ? *secret
                     : std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
}

}  // namespace

Result<std::string> LoadOrCreateServerSecret(FileSystem& fs, const std::string& data_dir) {
  constexpr size_t kSecretBytes = 32;
  const std::string path = JoinPath(data_dir, "server.secret");
  auto read = [&]() -> Result<std::string> {
    ASSIGN_OR_RAISE(auto bytes, ReadWholeFile(fs, path));
    std::string_view text = bytes->view();
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
    std::optional<std::string> secret = Unhex(text);
    if (!secret || secret->size() != kSecretBytes) {
      return Status::Corruption(path + " is not " + std::to_string(2 * kSecretBytes) +
                                " hex digits; remove it to make a new server secret (unknown "
                                "users' SCRAM salts and Kafka topic ids change with it)");
    }
    return *secret;
  };
  auto existing = read();
  if (!existing.status().IsNotFound()) return existing;
  RETURN_NOT_OK(fs.CreateDirs(data_dir));
  ASSIGN_OR_RAISE(std::string hex, RandomHex(kSecretBytes));
  // Written aside and moved in without replacing, so two servers starting at once agree.
  const std::string tmp = path + ".new-" + hex.substr(0, 8);
  {
    ASSIGN_OR_RAISE(auto file, fs.OpenFile(tmp, FileMode::kCreatePrivate));
    hex.push_back('\n');
    RETURN_NOT_OK(
        file->WriteAt(0, ByteSpan(reinterpret_cast<const uint8_t*>(hex.data()), hex.size())));
    RETURN_NOT_OK(file->Sync());
  }
  const Status moved = fs.RenameNoReplace(tmp, path);
  if (!moved.ok()) (void)fs.Remove(tmp);
  if (!moved.ok() && moved.code() != StatusCode::kAlreadyExists) return moved;
  RETURN_NOT_OK(fs.SyncDir(data_dir));
  return read();
}

Authenticator::Authenticator(std::shared_ptr<FileSystem> fs, std::string users_path,
                             std::chrono::seconds token_lifetime, LoginLimit limit,
                             std::string server_secret)
    : fs_(std::move(fs)),
      users_path_(std::move(users_path)),
      token_lifetime_(token_lifetime),
      limit_(limit),
      server_secret_(server_secret.empty() ? ProcessSecret() : std::move(server_secret)) {}

Result<UserStore> Authenticator::Users() { return UserStore::Load(fs_, users_path_); }

namespace {

// Failures are counted by the first 128 bytes of a name.
std::string FailureKey(std::string_view name) { return std::string(name.substr(0, 128)); }

}  // namespace

namespace {

Status LockedOut(std::chrono::steady_clock::duration left) {
  const auto wait = std::chrono::ceil<std::chrono::seconds>(left).count();
  return Status::ResourceExhausted("too many failed logins for this user name; retry in " +
                                   std::to_string(wait) + " s");
}

}  // namespace

Status Authenticator::CheckNotLockedOut(std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto now = std::chrono::steady_clock::now();
  auto it = failures_.find(FailureKey(name));
  if (it == failures_.end() || it->second.locked_until <= now) return Status::OK();
  return LockedOut(it->second.locked_until - now);
}

Status Authenticator::Admit(const std::string& key) {
  std::unique_lock<std::mutex> lock(mu_);
  const auto deadline = std::chrono::steady_clock::now() + limit_.queue_wait;
  while (true) {
    const auto now = std::chrono::steady_clock::now();
    // Names tried once and never again must not pile up: at 10,000, forget the idle ones.
    if (failures_.size() >= 10'000) {
      for (auto it = failures_.begin(); it != failures_.end();) {
        const bool idle = it->second.locked_until <= now && it->second.in_flight == 0;
        it = idle && it->first != key ? failures_.erase(it) : std::next(it);
      }
    }
    Failures& failures = failures_[key];
    if (failures.locked_until > now) return LockedOut(failures.locked_until - now);
    if (failures.count + failures.in_flight < limit_.max_failures) {
      ++failures.in_flight;
      return Status::OK();
    }
    if (login_finished_.wait_until(lock, deadline) == std::cv_status::timeout) {
      return Status::ResourceExhausted(
          "too many logins of this user name at once; retry when they have finished");
    }
  }
}

void Authenticator::Finish(const std::string& key, const Status& outcome) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    Failures& failures = failures_[key];
    --failures.in_flight;
    if (outcome.ok()) {
      failures.count = 0;
    } else if (outcome.code() == StatusCode::kUnauthenticated &&
               ++failures.count >= limit_.max_failures) {
      failures.count = 0;
      failures.locked_until = std::chrono::steady_clock::now() + limit_.lockout;
    }
    if (failures.count == 0 && failures.in_flight == 0 &&
        failures.locked_until <= std::chrono::steady_clock::now()) {
      failures_.erase(key);
    }
  }
  login_finished_.notify_all();
}

Status Authenticator::GuardLogin(std::string_view name, const std::function<Status()>& check) {
  const std::string key = FailureKey(name);
  RETURN_NOT_OK(Admit(key));
  const Status outcome = check();
  Finish(key, outcome);
  return outcome;
}

Result<User> Authenticator::CheckPassword(std::string_view name, std::string_view password) {
  std::optional<User> found;
  RETURN_NOT_OK(GuardLogin(name, [&]() -> Status {
    ASSIGN_OR_RAISE(auto users, Users());
    const User* user = users.Find(name);
    // The same work and the same answer whether the user exists or not.
    const std::string salt = user ? user->salt : std::string(32, '0');
    ASSIGN_OR_RAISE(std::string hash,
                    Pbkdf2(password, salt, user ? user->iterations : kIterations));
    if (!user || hash.size() != user->hash.size() ||
        CRYPTO_memcmp(hash.data(), user->hash.data(), hash.size()) != 0) {
      return Status::Unauthenticated("wrong user name or password");
    }
    found = *user;
    return Status::OK();
  }));
  return std::move(*found);
}

std::string Authenticator::MadeUpSalt(std::string_view name) const {
  const std::string mac = HmacSha256(server_secret_, "scram-salt:" + std::string(name));
  return Hex(reinterpret_cast<const unsigned char*>(mac.data()), 16);
}

Result<std::optional<User>> Authenticator::FindUser(std::string_view name) {
  ASSIGN_OR_RAISE(auto users, Users());
  const User* user = users.Find(name);
  return user ? std::optional<User>(*user) : std::nullopt;
}

Result<std::string> Authenticator::Login(std::string_view name, std::string_view password) {
  ASSIGN_OR_RAISE(User user, CheckPassword(name, password));
  ASSIGN_OR_RAISE(std::string token, RandomHex(32));
  std::lock_guard<std::mutex> lock(mu_);
  const auto now = std::chrono::steady_clock::now();
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    it = it->second.expires < now ? sessions_.erase(it) : std::next(it);
  }
  sessions_[token] = {user.name, user.salt, now + token_lifetime_};
  return token;
}

Result<User> Authenticator::Verify(std::string_view token) {
  User issued_to;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sessions_.find(std::string(token));
    if (it == sessions_.end() || it->second.expires < std::chrono::steady_clock::now()) {
      return Status::Unauthenticated("the bearer token is unknown or expired; authenticate again");
    }
    issued_to.name = it->second.user;
    issued_to.salt = it->second.salt;
  }
  return Reload(issued_to);
}

Result<User> Authenticator::Reload(const User& logged_in) {
  ASSIGN_OR_RAISE(auto users, Users());
  const User* user = users.Find(logged_in.name);
  if (!user || user->salt != logged_in.salt) {
    return Status::Unauthenticated("user " + Quote(logged_in.name) +
                                   " was removed or given a new password since this login; "
                                   "authenticate again");
  }
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

namespace {

// "n=<saslname>" with RFC 5802's escapes ("=2C" is ',', "=3D" is '=') undone.
std::optional<std::string> SaslName(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '=') {
      out.push_back(text[i]);
    } else if (text.substr(i, 3) == "=2C") {
      out.push_back(',');
      i += 2;
    } else if (text.substr(i, 3) == "=3D") {
      out.push_back('=');
      i += 2;
    } else {
      return std::nullopt;
    }
  }
  return out;
}

std::vector<std::string_view> SplitCommas(std::string_view text) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    parts.push_back(text.substr(start, comma - start));
    if (comma == std::string_view::npos) return parts;
    start = comma + 1;
  }
}

Status ScramError(const std::string& why) {
  return Status::Unauthenticated("SCRAM-SHA-256: " + why);
}

}  // namespace

Result<std::string> ScramSha256Server::ClientFirst(std::string_view message) {
  if (first_done_) return ScramError("a second client-first-message");
  first_done_ = true;
  // gs2-header: "n," or "y," (no channel binding), an optional "a=<authzid>", then ','.
  const auto parts = SplitCommas(message);
  if (parts.size() < 4 || (parts[0] != "n" && parts[0] != "y")) {
    return ScramError("the client-first-message must start with \"n,,\" (no channel binding)");
  }
  if (!parts[1].empty() && !parts[1].starts_with("a=")) {
    return ScramError("malformed authorization identity");
  }
  gs2_header_ = std::string(parts[0]) + "," + std::string(parts[1]) + ",";
  client_first_bare_ = std::string(message.substr(gs2_header_.size()));
  if (!parts[2].starts_with("n=") || !parts[3].starts_with("r=") || parts[3].size() < 3) {
    return ScramError("the client-first-message needs n=<user>,r=<nonce>");
  }
  const std::optional<std::string> name = SaslName(parts[2].substr(2));
  if (!name) return ScramError("malformed user name");
  if (!parts[1].empty() && SaslName(parts[1].substr(2)) != name) {
    return ScramError("the authorization identity must be the user");
  }
  for (size_t i = 4; i < parts.size(); ++i) {
    if (parts[i] == "tokenauth=true") return ScramError("delegation tokens are not supported");
  }
  RETURN_NOT_OK(authenticator_->CheckNotLockedOut(*name));
  name_ = *name;
  ASSIGN_OR_RAISE(user_, authenticator_->FindUser(*name));
  std::string salt;
  int iterations = kIterations;
  if (user_) {
    salt = user_->salt;
    iterations = user_->iterations;
  } else {
    // The same made-up salt every time for a name, even across restarts, so that asking twice
    // does not tell an unknown user from a known one (RFC 5802 section 9).
    salt = authenticator_->MadeUpSalt(*name);
  }
  ASSIGN_OR_RAISE(std::string server_nonce, RandomHex(18));
  nonce_ = std::string(parts[3].substr(2)) + server_nonce;
  server_first_ = "r=" + nonce_ + ",s=" + Base64(salt) + ",i=" + std::to_string(iterations);
  return server_first_;
}

Result<std::pair<std::string, User>> ScramSha256Server::ClientFinal(std::string_view message) {
  // nonce_ is set once a client-first-message was accepted.
  if (nonce_.empty() || final_done_) return ScramError("a client-final-message out of turn");
  final_done_ = true;
  // Refused when locked out since the first message (by other connections' failures).
  std::optional<std::pair<std::string, User>> result;
  RETURN_NOT_OK(authenticator_->GuardLogin(name_, [&]() -> Status {
    ASSIGN_OR_RAISE(result, CheckProof(message));
    return Status::OK();
  }));
  return std::move(*result);
}

Result<std::pair<std::string, User>> ScramSha256Server::CheckProof(std::string_view message) {
  const size_t proof_at = message.rfind(",p=");
  if (proof_at == std::string_view::npos)
    return ScramError("the client-final-message has no proof");
  const std::string_view without_proof = message.substr(0, proof_at);
  const auto parts = SplitCommas(without_proof);
  if (parts.size() < 2 || parts[0] != "c=" + Base64(gs2_header_) || parts[1] != "r=" + nonce_) {
    return ScramError("the client-final-message does not match the exchange");
  }
  const std::optional<std::string> proof = DecodeBase64(message.substr(proof_at + 3));
  const std::string auth_message =
      client_first_bare_ + "," + server_first_ + "," + std::string(without_proof);
  const std::optional<std::string> salted_password =
      user_ ? Unhex(user_->hash) : std::optional<std::string>();
  if (!proof || !user_ || !salted_password || proof->size() != SHA256_DIGEST_LENGTH) {
    return Status::Unauthenticated("wrong user name or password");
  }
  const std::string stored_key = Sha256(HmacSha256(*salted_password, "Client Key"));
  const std::string client_signature = HmacSha256(stored_key, auth_message);
  std::string client_key = *proof;
  for (size_t i = 0; i < client_key.size(); ++i) client_key[i] ^= client_signature[i];
  const std::string computed = Sha256(client_key);
  if (CRYPTO_memcmp(computed.data(), stored_key.data(), stored_key.size()) != 0) {
    return Status::Unauthenticated("wrong user name or password");
  }
  const std::string server_key = HmacSha256(*salted_password, "Server Key");
  return std::make_pair("v=" + Base64(HmacSha256(server_key, auth_message)), *user_);
}

}  // namespace oxbow::auth
