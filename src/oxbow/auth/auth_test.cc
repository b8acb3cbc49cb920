#include "oxbow/auth/auth.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

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

}  // namespace
}  // namespace oxbow::auth
