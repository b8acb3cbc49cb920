#include "oxbow/auth/auth.h"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <sys/stat.h>

#include <atomic>
#include <barrier>
#include <filesystem>
#include <thread>
#include <vector>

namespace oxbow::auth {
namespace {

class AuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("oxbow-auth-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    path_ = UserStore::PathIn(dir_.string());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
  std::string path_;
};

TEST_F(AuthTest, GrantsMatchTablesAndLevels) {
  User u;
  u.grants = {*ParseGrant("shop.*=write"), *ParseGrant("ops.audit=read")};
  EXPECT_TRUE(u.Allows("shop.orders", Access::kRead));
  EXPECT_TRUE(u.Allows("shop.orders", Access::kWrite));
  EXPECT_FALSE(u.Allows("shop.orders", Access::kAdmin));
  EXPECT_FALSE(u.Allows("shopping.x", Access::kRead));
  EXPECT_TRUE(u.Allows("ops.audit", Access::kRead));
  EXPECT_FALSE(u.Allows("ops.audit", Access::kWrite));
  EXPECT_FALSE(u.Allows("ops.other", Access::kRead));
  User root;
  root.grants = {*ParseGrant("*=admin")};
  EXPECT_TRUE(root.Allows("any.thing", Access::kAdmin));
  EXPECT_FALSE(ParseGrant("shop.*").ok());
  EXPECT_FALSE(ParseGrant("shop.*=owner").ok());
  EXPECT_FALSE(ParseGrant("shop=read").ok());
  EXPECT_FALSE(ParseGrant("a.b.*=read").ok());
  // Every form that could match no table is refused, as "a*" always was.
  for (const char* never : {"*.*=read", ".*=read", "shop.ord*=read", "shop.=read", "*.orders=read",
                            " shop.*=read", "shop/x.*=read", "sh op.*=read", "a*=read",
                            "shop.or ders=read", ".orders=read", "shop..t=read"}) {
    const auto grant = ParseGrant(never);
    EXPECT_EQ(grant.status().code(), StatusCode::kInvalid) << never;
    EXPECT_NE(grant.status().message().find("must be \"ns.t\", \"ns.*\" or \"*\""),
              std::string::npos)
        << grant.status().ToString();
  }
  for (const char* valid : {"*=read", "shop.*=read", "shop.orders=admin", "a-b.c_d=write"}) {
    EXPECT_TRUE(ParseGrant(valid).ok()) << valid;
  }
}

TEST_F(AuthTest, UsersFileWithAGrantThatMatchesNothingIsCorruption) {
  auto fs = PosixFileSystem::Default();
  const std::string text =
      R"({"users": [{"name": "a", "salt": "00", "hash": "00", "iterations": 1,)"
      R"( "grants": [{"tables": "shop.ord*", "access": "read"}]}]})";
  ASSERT_TRUE(WriteFileAtomically(*fs, dir_.string(), "users.json", text).ok());
  const Status loaded = UserStore::Load(fs, path_).status();
  EXPECT_TRUE(loaded.IsCorruption()) << loaded.ToString();
  EXPECT_NE(loaded.message().find("'shop.ord*'"), std::string::npos) << loaded.ToString();
}

TEST_F(AuthTest, UsersFileIsWrittenOwnerOnlyAndCheckedSo) {
  auto fs = PosixFileSystem::Default();
  EXPECT_TRUE(UserStore::CheckPrivate(path_).ok());  // no file yet
  // A file left group- and world-readable (as every earlier version wrote it) is refused.
  ASSERT_TRUE(WriteFileAtomically(*fs, dir_.string(), "users.json", R"({"users": []})").ok());
  ASSERT_EQ(::chmod(path_.c_str(), 0644), 0);
  const Status open = UserStore::CheckPrivate(path_);
  EXPECT_EQ(open.code(), StatusCode::kInvalid);
  EXPECT_NE(open.message().find("mode 0644"), std::string::npos) << open.ToString();
  EXPECT_NE(open.message().find("chmod 600 " + path_), std::string::npos) << open.ToString();
  // Saving makes it 0600, whatever a left-over temporary file had.
  ASSERT_TRUE(WriteFileAtomically(*fs, dir_.string(), "users.json.tmp", "").ok());
  ASSERT_EQ(::chmod((path_ + ".tmp").c_str(), 0666), 0);
  auto store = UserStore::Load(fs, path_);
  ASSERT_TRUE(store->Put("alice", "correct horse", {}).ok());
  ASSERT_TRUE(store->Save().ok());
  struct stat st;
  ASSERT_EQ(::stat(path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_TRUE(UserStore::CheckPrivate(path_).ok());
}

TEST_F(AuthTest, ServerSecretIsMadeOnceAndKeptPrivate) {
  auto fs = PosixFileSystem::Default();
  const std::string data_dir = (dir_ / "data").string();
  auto first = LoadOrCreateServerSecret(*fs, data_dir);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->size(), 32u);
  auto second = LoadOrCreateServerSecret(*fs, data_dir);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(*second, *first);
  struct stat st;
  ASSERT_EQ(::stat((data_dir + "/server.secret").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_TRUE(WriteFileAtomically(*fs, data_dir, "server.secret", "abc\n").ok());
  const Status damaged = LoadOrCreateServerSecret(*fs, data_dir).status();
  EXPECT_TRUE(damaged.IsCorruption()) << damaged.ToString();
  EXPECT_NE(damaged.message().find("server.secret"), std::string::npos);
}

TEST_F(AuthTest, UsersSurviveSaveAndLoginIssuesTokens) {
  auto fs = PosixFileSystem::Default();
  auto store = UserStore::Load(fs, path_);
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE(store->Put("alice", "correct horse", {*ParseGrant("shop.*=write")}).ok());
  EXPECT_FALSE(store->Put("bob", "short", {}).ok());
  EXPECT_FALSE(store->Put("bad name", "long enough", {}).ok());
  ASSERT_TRUE(store->Save().ok());
  auto text = ReadWholeFile(*fs, path_);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(std::string((*text)->view()).find("correct horse"), std::string::npos);

  Authenticator auth(fs, path_);
  EXPECT_EQ(auth.Login("alice", "wrong").status().code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(auth.Login("nobody", "correct horse").status().code(), StatusCode::kUnauthenticated);
  auto token = auth.Login("alice", "correct horse");
  ASSERT_TRUE(token.ok()) << token.status().ToString();
  auto user = auth.Verify(*token);
  ASSERT_TRUE(user.ok());
  EXPECT_EQ(user->name, "alice");
  EXPECT_TRUE(user->Allows("shop.x", Access::kWrite));
  EXPECT_EQ(auth.Verify("not-a-token").status().code(), StatusCode::kUnauthenticated);

  // Removing the user ends their sessions at once.
  auto again = UserStore::Load(fs, path_);
  ASSERT_TRUE(again->Remove("alice").ok());
  EXPECT_TRUE(again->Remove("alice").IsNotFound());
  ASSERT_TRUE(again->Save().ok());
  EXPECT_EQ(auth.Verify(*token).status().code(), StatusCode::kUnauthenticated);
}

TEST_F(AuthTest, TokensDieWithTheIdentityTheyWereIssuedTo) {
  auto fs = PosixFileSystem::Default();
  auto put = [&](const std::string& password, const char* grant) {
    auto store = UserStore::Load(fs, path_);
    ASSERT_TRUE(store->Put("x", password, {*ParseGrant(grant)}).ok());
    ASSERT_TRUE(store->Save().ok());
  };
  put("first password", "a.*=read");
  Authenticator auth(fs, path_);
  auto token = auth.Login("x", "first password");
  ASSERT_TRUE(token.ok());
  auto logged_in = auth.Verify(*token);
  ASSERT_TRUE(logged_in.ok());
  // Removed, then created again under the same name with more grants: the old token stays dead.
  auto store = UserStore::Load(fs, path_);
  ASSERT_TRUE(store->Remove("x").ok());
  ASSERT_TRUE(store->Save().ok());
  put("first password", "*=admin");
  const Status revived = auth.Verify(*token).status();
  EXPECT_EQ(revived.code(), StatusCode::kUnauthenticated);
  EXPECT_NE(revived.message().find("removed or given a new password"), std::string::npos)
      << revived.ToString();
  EXPECT_EQ(auth.Reload(*logged_in).status().code(), StatusCode::kUnauthenticated);
  // A password change ends the tokens of the old one too.
  auto fresh = auth.Login("x", "first password");
  ASSERT_TRUE(fresh.ok());
  EXPECT_TRUE(auth.Verify(*fresh).ok());
  put("second password", "*=admin");
  EXPECT_EQ(auth.Verify(*fresh).status().code(), StatusCode::kUnauthenticated);
  auto current = auth.Login("x", "second password");
  ASSERT_TRUE(current.ok());
  auto user = auth.Verify(*current);
  ASSERT_TRUE(user.ok());
  EXPECT_TRUE(auth.Reload(*user).ok());
}

TEST_F(AuthTest, BasicCredentials) {
  auto ok = ParseBasicCredentials("YWxpY2U6czNjcjp0");  // alice:s3cr:t
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->first, "alice");
  EXPECT_EQ(ok->second, "s3cr:t");
  auto padded = ParseBasicCredentials("YTpi");  // a:b
  ASSERT_TRUE(padded.ok());
  EXPECT_EQ(padded->second, "b");
  EXPECT_EQ(ParseBasicCredentials("YTpiYw==")->second, "bc");
  for (const char* bad : {"", "====", "YQ==", "Y===", "YT=p", "!!!!", "YTpi="}) {
    EXPECT_EQ(ParseBasicCredentials(bad).status().code(), StatusCode::kUnauthenticated) << bad;
  }
}

TEST_F(AuthTest, ExpiredTokensAreRefused) {
  auto fs = PosixFileSystem::Default();
  auto store = UserStore::Load(fs, path_);
  ASSERT_TRUE(store->Put("alice", "correct horse", {}).ok());
  ASSERT_TRUE(store->Save().ok());
  Authenticator auth(fs, path_, std::chrono::seconds(0));
  auto token = auth.Login("alice", "correct horse");
  ASSERT_TRUE(token.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(auth.Verify(*token).status().code(), StatusCode::kUnauthenticated);
}

TEST_F(AuthTest, RepeatedWrongPasswordsLockTheNameOut) {
  auto fs = PosixFileSystem::Default();
  auto store = UserStore::Load(fs, path_);
  ASSERT_TRUE(store->Put("alice", "correct horse", {}).ok());
  ASSERT_TRUE(store->Save().ok());
  Authenticator auth(fs, path_, std::chrono::hours(1), {3, std::chrono::seconds(1)});
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(auth.Login("alice", "wrong").status().code(), StatusCode::kUnauthenticated);
  }
  // Locked: even the right password is refused, saying to wait; other names are not locked.
  auto locked = auth.Login("alice", "correct horse");
  EXPECT_EQ(locked.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(locked.status().message().find("retry in 1 s"), std::string::npos)
      << locked.status().ToString();
  for (int i = 0; i < 3; ++i) (void)auth.Login("nobody", "wrong");
  EXPECT_EQ(auth.Login("nobody", "x").status().code(), StatusCode::kResourceExhausted);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  EXPECT_TRUE(auth.Login("alice", "correct horse").ok());
  // A success clears the count: two more failures do not lock.
  for (int i = 0; i < 2; ++i) (void)auth.Login("alice", "wrong");
  EXPECT_TRUE(auth.Login("alice", "correct horse").ok());
}

TEST_F(AuthTest, AuthorizationHeaders) {
  EXPECT_EQ(AuthorizationValue("Bearer abc", "Bearer"), "abc");
  EXPECT_EQ(AuthorizationValue("bearer abc", "Bearer"), "abc");
  EXPECT_EQ(AuthorizationValue("Bearer", "Bearer"), std::nullopt);
  EXPECT_EQ(AuthorizationValue("Bearerabc", "Bearer"), std::nullopt);
  EXPECT_EQ(AuthorizationValue("Basic abc", "Bearer"), std::nullopt);
  const std::string encoded = EncodeBasicCredentials("alice", "s3cr:t");
  EXPECT_EQ(encoded, "YWxpY2U6czNjcjp0");
  EXPECT_EQ(ParseBasicCredentials(EncodeBasicCredentials("a", "bc"))->second, "bc");

  auto fs = PosixFileSystem::Default();
  auto store = UserStore::Load(fs, path_);
  ASSERT_TRUE(store->Put("alice", "correct horse", {}).ok());
  ASSERT_TRUE(store->Save().ok());
  Authenticator auth(fs, path_);
  EXPECT_EQ(auth.VerifyHeader("Basic " + EncodeBasicCredentials("alice", "correct horse"))->name,
            "alice");
  EXPECT_EQ(auth.VerifyHeader("Basic " + EncodeBasicCredentials("alice", "nope")).status().code(),
            StatusCode::kUnauthenticated);
  auto token = auth.Login("alice", "correct horse");
  ASSERT_TRUE(token.ok());
  EXPECT_EQ(auth.VerifyHeader("Bearer " + *token)->name, "alice");
  EXPECT_EQ(auth.VerifyHeader("Bearer 00").status().code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(auth.VerifyHeader("").status().code(), StatusCode::kUnauthenticated);
}

TEST_F(AuthTest, DamagedUsersFileIsCorruption) {
  auto fs = PosixFileSystem::Default();
  auto file = fs->OpenFile(path_, FileMode::kCreate);
  ASSERT_TRUE(file.ok());
  const std::string junk = "{\"users\": [{\"name\": 3}]}";
  ASSERT_TRUE((*file)
                  ->WriteAt(0, ByteSpan(reinterpret_cast<const uint8_t*>(junk.data()), junk.size()))
                  .ok());
  EXPECT_TRUE(UserStore::Load(fs, path_).status().IsCorruption());
}

TEST_F(AuthTest, SaslPlainMessages) {
  using namespace std::string_literals;
  EXPECT_EQ(*ParseSaslPlain("\0alice\0s3cret"s), std::make_pair("alice"s, "s3cret"s));
  EXPECT_EQ(*ParseSaslPlain("alice\0alice\0s3cret"s), std::make_pair("alice"s, "s3cret"s));
  for (const std::string& bad : {""s, "alice"s, "\0alice"s, "bob\0alice\0pw"s, "\0a\0b\0c"s}) {
    EXPECT_EQ(ParseSaslPlain(bad).status().code(), StatusCode::kUnauthenticated);
  }
}

// The client side of SCRAM-SHA-256 (RFC 5802 section 3), written from the RFC for this test;
// librdkafka, kafka-python and the Java client are the reference in tests/integration.
std::string Base64(const std::string& bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  out.resize(EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                             reinterpret_cast<const unsigned char*>(bytes.data()),
                             static_cast<int>(bytes.size())));
  return out;
}

std::string Unbase64(const std::string& text) {
  std::string out(text.size(), '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(text.data()),
                          static_cast<int>(text.size()));
  out.resize(static_cast<size_t>(n) - std::count(text.begin(), text.end(), '='));
  return out;
}

std::string Hmac(const std::string& key, const std::string& data) {
  unsigned char out[32];
  unsigned int n = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &n);
  return std::string(reinterpret_cast<char*>(out), n);
}

// The client-final-message for `server_first`, and the server signature to expect.
std::pair<std::string, std::string> ScramClientFinal(const std::string& password,
                                                     const std::string& client_first_bare,
                                                     const std::string& server_first) {
  const auto nonce = server_first.substr(2, server_first.find(",s=") - 2);
  const auto s_at = server_first.find(",s=") + 3;
  const auto i_at = server_first.find(",i=");
  const std::string salt = Unbase64(server_first.substr(s_at, i_at - s_at));
  const int iterations = std::stoi(server_first.substr(i_at + 3));
  unsigned char salted[32];
  PKCS5_PBKDF2_HMAC(password.data(), static_cast<int>(password.size()),
                    reinterpret_cast<const unsigned char*>(salt.data()),
                    static_cast<int>(salt.size()), iterations, EVP_sha256(), 32, salted);
  const std::string salted_password(reinterpret_cast<char*>(salted), 32);
  const std::string client_key = Hmac(salted_password, "Client Key");
  unsigned char stored[32];
  SHA256(reinterpret_cast<const unsigned char*>(client_key.data()), 32, stored);
  const std::string without_proof = "c=biws,r=" + nonce;
  const std::string auth_message = client_first_bare + "," + server_first + "," + without_proof;
  const std::string signature =
      Hmac(std::string(reinterpret_cast<char*>(stored), 32), auth_message);
  std::string proof = client_key;
  for (size_t i = 0; i < proof.size(); ++i) proof[i] ^= signature[i];
  return {without_proof + ",p=" + Base64(proof),
          "v=" + Base64(Hmac(Hmac(salted_password, "Server Key"), auth_message))};
}

TEST_F(AuthTest, ScramSha256Exchange) {
  auto fs = PosixFileSystem::Default();
  auto store = UserStore::Load(fs, path_);
  ASSERT_TRUE(store->Put("alice", "correct horse", {*ParseGrant("shop.*=read")}).ok());
  ASSERT_TRUE(store->Save().ok());
  Authenticator auth(fs, path_);
  for (const std::string password : {"correct horse", "wrong horse"}) {
    ScramSha256Server server(&auth);
    const std::string bare = "n=alice,r=fyko+d2lbbFgONRv9qkxdawL";
    auto first = server.ClientFirst("n,," + bare);
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    EXPECT_TRUE(first->starts_with("r=fyko+d2lbbFgONRv9qkxdawL")) << *first;
    EXPECT_TRUE(first->ends_with(",i=100000")) << *first;
    const auto [client_final, server_signature] = ScramClientFinal(password, bare, *first);
    auto final_message = server.ClientFinal(client_final);
    if (password == "correct horse") {
      ASSERT_TRUE(final_message.ok()) << final_message.status().ToString();
      EXPECT_EQ(final_message->first, server_signature);
      EXPECT_EQ(final_message->second.name, "alice");
      EXPECT_TRUE(final_message->second.Allows("shop.t", Access::kRead));
    } else {
      EXPECT_EQ(final_message.status().code(), StatusCode::kUnauthenticated);
    }
  }
  // An unknown user gets a salt like anyone else's, the same each time, then fails.
  ScramSha256Server server(&auth);
  auto first = server.ClientFirst("n,,n=mallory,r=abc");
  ASSERT_TRUE(first.ok());
  EXPECT_FALSE(server.ClientFinal(ScramClientFinal("x", "n=mallory,r=abc", *first).first).ok());
  ScramSha256Server again(&auth);
  auto salt = [](const std::string& m) {
    return m.substr(m.find(",s="), m.find(",i=") - m.find(",s="));
  };
  EXPECT_EQ(salt(*again.ClientFirst("n,,n=mallory,r=abc")), salt(*first));
  EXPECT_EQ(salt(*first).size(),
            salt(*ScramSha256Server(&auth).ClientFirst("n,,n=alice,r=abc")).size());
  // Keyed by the server secret: the same across restarts (a new Authenticator with the same
  // secret), different under another secret.
  Authenticator restarted(fs, path_, std::chrono::hours(1), {}, std::string(32, 's'));
  Authenticator restarted_again(fs, path_, std::chrono::hours(1), {}, std::string(32, 's'));
  Authenticator other(fs, path_, std::chrono::hours(1), {}, std::string(32, 'o'));
  auto unknown_salt = [&](Authenticator* a) {
    return salt(*ScramSha256Server(a).ClientFirst("n,,n=mallory,r=abc"));
  };
  EXPECT_EQ(unknown_salt(&restarted), unknown_salt(&restarted_again));
  EXPECT_NE(unknown_salt(&restarted), unknown_salt(&other));
  for (const char* bad :
       {"", "p=tls-unique,,n=alice,r=x", "n,,n=alice", "n,,r=x,n=alice", "n,a=bob,n=alice,r=x",
        "n,,n=al=ice,r=x", "n,,n=alice,r=x,tokenauth=true"}) {
    ScramSha256Server s(&auth);
    EXPECT_EQ(s.ClientFirst(bad).status().code(), StatusCode::kUnauthenticated) << bad;
  }
}

TEST_F(AuthTest, ScramFailuresShareThePasswordLockout) {
  auto fs = PosixFileSystem::Default();
  auto store = UserStore::Load(fs, path_);
  ASSERT_TRUE(store->Put("alice", "correct horse", {}).ok());
  ASSERT_TRUE(store->Save().ok());
  Authenticator auth(fs, path_, std::chrono::hours(1), {3, std::chrono::seconds(1)});
  const std::string bare = "n=alice,r=abc";
  auto scram = [&](const std::string& password) -> Status {
    ScramSha256Server server(&auth);
    auto first = server.ClientFirst("n,," + bare);
    if (!first.ok()) return first.status();
    return server.ClientFinal(ScramClientFinal(password, bare, *first).first).status();
  };
  // Two wrong SCRAM proofs and one wrong password: the name is locked out for every way in.
  EXPECT_EQ(scram("wrong").code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(scram("wrong").code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(auth.Login("alice", "wrong").status().code(), StatusCode::kUnauthenticated);
  const Status locked = scram("correct horse");
  EXPECT_EQ(locked.code(), StatusCode::kResourceExhausted) << locked.ToString();
  EXPECT_NE(locked.message().find("too many failed logins"), std::string::npos);
  EXPECT_EQ(auth.Login("alice", "correct horse").status().code(), StatusCode::kResourceExhausted);
  // A lockout that starts between the two messages refuses the proof, right or not.
  ScramSha256Server pending(&auth);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  auto first = pending.ClientFirst("n,," + bare);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  for (int i = 0; i < 3; ++i) (void)auth.Login("alice", "wrong");
  EXPECT_EQ(
      pending.ClientFinal(ScramClientFinal("correct horse", bare, *first).first).status().code(),
      StatusCode::kResourceExhausted);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  EXPECT_TRUE(scram("correct horse").ok());
  // A right proof clears the count: two more failures do not lock.
  EXPECT_EQ(scram("wrong").code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(scram("wrong").code(), StatusCode::kUnauthenticated);
  EXPECT_TRUE(scram("correct horse").ok());
}

// 40 wrong guesses at once for one name: no more are checked than the lockout allows, on every
// way of logging in (the listeners all go through CheckPassword or ScramSha256Server).
TEST_F(AuthTest, ConcurrentGuessesCannotOutrunTheLockout) {
  auto fs = PosixFileSystem::Default();
  auto store = UserStore::Load(fs, path_);
  ASSERT_TRUE(store->Put("alice", "correct horse", {}).ok());
  ASSERT_TRUE(store->Save().ok());
  constexpr int kGuesses = 40;
  for (const bool scram : {false, true}) {
    Authenticator auth(fs, path_, std::chrono::hours(1), {5, std::chrono::seconds(30)});
    std::atomic<int> checked{0}, refused{0};
    std::barrier start(kGuesses);
    std::vector<std::thread> threads;
    for (int i = 0; i < kGuesses; ++i) {
      threads.emplace_back([&] {
        ScramSha256Server server(&auth);
        std::string first;
        if (scram) {
          auto f = server.ClientFirst("n,,n=alice,r=abc");
          EXPECT_TRUE(f.ok()) << f.status().ToString();
          if (f.ok()) first = *f;
        }
        start.arrive_and_wait();
        const Status st =
            scram ? server.ClientFinal(ScramClientFinal("wrong", "n=alice,r=abc", first).first)
                        .status()
                  : auth.CheckPassword("alice", "wrong").status();
        (st.code() == StatusCode::kUnauthenticated ? checked : refused)++;
        EXPECT_TRUE(st.code() == StatusCode::kUnauthenticated ||
                    st.code() == StatusCode::kResourceExhausted)
            << st.ToString();
      });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(checked.load(), 5) << (scram ? "SCRAM" : "password");
    EXPECT_EQ(refused.load(), kGuesses - 5);
    EXPECT_EQ(auth.CheckPassword("alice", "correct horse").status().code(),
              StatusCode::kResourceExhausted);
  }
}

// Right passwords sent at once all get in: beyond the budget they wait their turn.
TEST_F(AuthTest, ConcurrentRightPasswordsWaitTheirTurn) {
  auto fs = PosixFileSystem::Default();
  auto store = UserStore::Load(fs, path_);
  ASSERT_TRUE(store->Put("alice", "correct horse", {}).ok());
  ASSERT_TRUE(store->Save().ok());
  Authenticator auth(fs, path_);
  std::atomic<int> in{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 12; ++i) {
    threads.emplace_back([&] {
      if (auth.CheckPassword("alice", "correct horse").ok()) in++;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(in.load(), 12);
}

}  // namespace
}  // namespace oxbow::auth
