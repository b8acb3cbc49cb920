#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "oxbow/storage/s3_internal.h"

namespace oxbow::storage {
namespace {

TEST(S3UriTest, SplitsBucketAndKey) {
  auto location = ParseS3Uri("s3://lake-bucket/warehouse/ns/t/");
  ASSERT_TRUE(location.ok()) << location.status().ToString();
  EXPECT_EQ(location->bucket, "lake-bucket");
  EXPECT_EQ(location->key, "warehouse/ns/t");
  auto root = ParseS3Uri("s3://lake-bucket");
  ASSERT_TRUE(root.ok());
  EXPECT_EQ(root->key, "");
  EXPECT_FALSE(ParseS3Uri("/local/path").ok());
  EXPECT_FALSE(ParseS3Uri("s3:///key").ok());
  auto upper = ParseS3Uri("s3://Bucket/key");
  ASSERT_FALSE(upper.ok());
  EXPECT_NE(upper.status().message().find("a-z"), std::string::npos);
  EXPECT_TRUE(IsS3Uri("s3://b/k"));
  EXPECT_FALSE(IsS3Uri("file:///tmp"));
}

TEST(S3UrlTest, EncodesAsSigV4Wants) {
  EXPECT_EQ(UriEncode("a b/c~d_e.f-g", false), "a%20b/c~d_e.f-g");
  EXPECT_EQ(UriEncode("a/b=c&d+é", true), "a%2Fb%3Dc%26d%2B%C3%A9");
}

TEST(S3UrlTest, PathStyleAndVirtualHost) {
  S3Options options;
  options.endpoint = "http://127.0.0.1:9000/";
  options.path_style = true;
  auto url = ObjectUrl(options, "lake", "ns/t/data/part 1.parquet", "uploads=");
  ASSERT_TRUE(url.ok());
  EXPECT_EQ(*url, "http://127.0.0.1:9000/lake/ns/t/data/part%201.parquet?uploads=");

  options.path_style = false;
  options.endpoint = "https://storage.example.com";
  url = ObjectUrl(options, "lake", "k");
  ASSERT_TRUE(url.ok());
  EXPECT_EQ(*url, "https://lake.storage.example.com/k");
  EXPECT_FALSE(ObjectUrl(options, "dotted.bucket", "k").ok());

  options.endpoint.clear();
  options.region = "eu-west-1";
  url = ObjectUrl(options, "lake", "");
  ASSERT_TRUE(url.ok());
  EXPECT_EQ(*url, "https://lake.s3.eu-west-1.amazonaws.com/");
  EXPECT_EQ(SigV4Provider(options), "aws:amz:eu-west-1:s3");

  options.endpoint = "ftp://host";
  EXPECT_FALSE(ObjectUrl(options, "lake", "k").ok());
}

constexpr char kListPage[] = R"(<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Name>lake</Name><Prefix>ns/</Prefix><KeyCount>3</KeyCount><MaxKeys>2</MaxKeys>
  <IsTruncated>true</IsTruncated>
  <NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>
  <Contents><Key>ns/a&amp;b &lt;1&gt;.parquet</Key><Size>1234</Size><ETag>&quot;x&quot;</ETag></Contents>
  <!-- a comment -->
  <Contents><Key>ns/&#233;t&#xE9;</Key><Size>0</Size></Contents>
  <CommonPrefixes><Prefix>ns/t/</Prefix></CommonPrefixes>
</ListBucketResult>)";

TEST(S3XmlTest, ParsesListObjectsV2) {
  auto page = ParseListObjectsV2(kListPage);
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  ASSERT_EQ(page->objects.size(), 2u);
  EXPECT_EQ(page->objects[0].key, "ns/a&b <1>.parquet");
  EXPECT_EQ(page->objects[0].size, 1234);
  EXPECT_EQ(page->objects[1].key, "ns/\xC3\xA9t\xC3\xA9");
  ASSERT_EQ(page->common_prefixes.size(), 1u);
  EXPECT_EQ(page->common_prefixes[0], "ns/t/");
  EXPECT_EQ(page->next_continuation_token, "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=");
}

TEST(S3XmlTest, LastPageHasNoToken) {
  auto page = ParseListObjectsV2(
      "<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>k</Key><Size>1</Size>"
      "</Contents></ListBucketResult>");
  ASSERT_TRUE(page.ok());
  EXPECT_TRUE(page->next_continuation_token.empty());
}

TEST(S3XmlTest, RefusesMalformedAnswers) {
  for (const char* bad :
       {"", "<ListBucketResult>", "<ListBucketResult></Other>", "<a><b></a></b>", "<a>&bogus;</a>",
        "<a>&#0;</a>", "<a>&#x110000;</a>", "<!DOCTYPE a [<!ENTITY x \"y\">]><a>&x;</a>",
        "<a attr=unquoted/>", "<a/><b/>", "text only"}) {
    EXPECT_FALSE(ParseXml(bad).ok()) << bad;
  }
  EXPECT_FALSE(ParseListObjectsV2("<Error><Code>x</Code></Error>").ok());
  EXPECT_FALSE(ParseListObjectsV2("<ListBucketResult><Contents><Size>1</Size></Contents>"
                                  "</ListBucketResult>")
                   .ok());
  EXPECT_FALSE(ParseListObjectsV2("<ListBucketResult><Contents><Key>k</Key><Size>-1</Size>"
                                  "</Contents></ListBucketResult>")
                   .ok());
  EXPECT_FALSE(
      ParseListObjectsV2("<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>")
          .ok());
  std::string deep;
  for (int i = 0; i < 40; ++i) deep += "<a>";
  for (int i = 0; i < 40; ++i) deep += "</a>";
  EXPECT_FALSE(ParseXml(deep).ok());
}

TEST(S3XmlTest, ParsesUploadId) {
  auto id = ParseUploadId(
      "<?xml version=\"1.0\"?><InitiateMultipartUploadResult><Bucket>b</Bucket><Key>k</Key>"
      "<UploadId>VXBsb2FkIElE</UploadId></InitiateMultipartUploadResult>");
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(*id, "VXBsb2FkIElE");
  EXPECT_FALSE(ParseUploadId("<InitiateMultipartUploadResult/>").ok());
}

TEST(S3ErrorTest, TranslatesCodes) {
  auto error = [](const char* code) {
    return std::string("<Error><Code>") + code + "</Code><Message>said S3</Message></Error>";
  };
  Status st = HttpErrorToStatus(403, error("SignatureDoesNotMatch"), "GET s3://b/k");
  EXPECT_EQ(st.code(), StatusCode::kUnauthenticated);
  EXPECT_NE(st.message().find("SignatureDoesNotMatch"), std::string::npos);
  EXPECT_NE(st.message().find("GET s3://b/k"), std::string::npos);
  EXPECT_NE(st.message().find("AWS_SECRET_ACCESS_KEY"), std::string::npos);
  EXPECT_EQ(HttpErrorToStatus(403, error("InvalidAccessKeyId"), "x").code(),
            StatusCode::kUnauthenticated);
  EXPECT_EQ(HttpErrorToStatus(404, error("XAdminUserNotFound"), "x").code(),
            StatusCode::kUnauthenticated);
  EXPECT_EQ(HttpErrorToStatus(403, error("AccessDenied"), "x").code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(HttpErrorToStatus(404, error("NoSuchBucket"), "x").code(), StatusCode::kNotFound);
  EXPECT_EQ(HttpErrorToStatus(404, "", "HEAD s3://b/k").code(), StatusCode::kNotFound);
  EXPECT_EQ(HttpErrorToStatus(412, "", "x").code(), StatusCode::kAlreadyExists);
  Status busy = HttpErrorToStatus(503, error("SlowDown"), "PUT s3://b/k");
  EXPECT_EQ(busy.code(), StatusCode::kIOError);
  EXPECT_NE(busy.message().find("SlowDown: said S3"), std::string::npos);
  EXPECT_TRUE(IsRetryableHttpStatus(503));
  EXPECT_TRUE(IsRetryableHttpStatus(500));
  EXPECT_FALSE(IsRetryableHttpStatus(403));
  EXPECT_FALSE(IsRetryableHttpStatus(404));
  EXPECT_EQ(CurlErrorToStatus(7, "Failed to connect", "GET s3://b/k").code(), StatusCode::kIOError);
  EXPECT_TRUE(IsRetryableCurlError(7));   // CURLE_COULDNT_CONNECT
  EXPECT_TRUE(IsRetryableCurlError(28));  // CURLE_OPERATION_TIMEDOUT
  EXPECT_FALSE(IsRetryableCurlError(3));  // CURLE_URL_MALFORMAT
}

TEST(S3CredentialsTest, ReadsTheProfile) {
  constexpr char kFile[] =
      "# comment\n[default]\naws_access_key_id = AKIADEFAULT\naws_secret_access_key=s1\n\n"
      "[ci]\r\n; other comment\r\naws_access_key_id=AKIACI\r\naws_secret_access_key = s2\r\n"
      "aws_session_token = tok\r\n";
  auto ci = ParseCredentialsFile(kFile, "ci");
  ASSERT_TRUE(ci.has_value());
  EXPECT_EQ(ci->access_key_id, "AKIACI");
  EXPECT_EQ(ci->secret_access_key, "s2");
  EXPECT_EQ(ci->session_token, "tok");
  auto def = ParseCredentialsFile(kFile, "default");
  ASSERT_TRUE(def.has_value());
  EXPECT_EQ(def->access_key_id, "AKIADEFAULT");
  EXPECT_TRUE(def->session_token.empty());
  EXPECT_FALSE(ParseCredentialsFile(kFile, "missing").has_value());
}

class S3EnvironmentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : kNames) unsetenv(name);
  }
  void TearDown() override {
    for (const char* name : kNames) unsetenv(name);
  }
  static constexpr const char* kNames[] = {
      "AWS_ENDPOINT_URL",   "AWS_ENDPOINT_URL_S3", "AWS_REGION",
      "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID",   "AWS_SECRET_ACCESS_KEY",
      "AWS_SESSION_TOKEN",  "AWS_PROFILE",         "AWS_SHARED_CREDENTIALS_FILE"};
};

TEST_F(S3EnvironmentTest, ReadsTheStandardVariables) {
  setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1234", 1);
  setenv("AWS_REGION", "eu-central-1", 1);
  setenv("AWS_ACCESS_KEY_ID", "AKIAENV", 1);
  setenv("AWS_SECRET_ACCESS_KEY", "secret", 1);
  setenv("AWS_SESSION_TOKEN", "token", 1);
  S3Options options = S3OptionsFromEnvironment();
  EXPECT_EQ(options.endpoint, "http://127.0.0.1:1234");
  EXPECT_TRUE(options.path_style);
  EXPECT_EQ(options.region, "eu-central-1");
  EXPECT_EQ(options.access_key_id, "AKIAENV");
  EXPECT_EQ(options.secret_access_key, "secret");
  EXPECT_EQ(options.session_token, "token");
}

TEST_F(S3EnvironmentTest, FallsBackToTheCredentialsFile) {
  const std::string file = ::testing::TempDir() + "/s3_test_credentials";
  std::ofstream(file) << "[other]\naws_access_key_id=AKIAFILE\naws_secret_access_key=fs\n";
  setenv("AWS_SHARED_CREDENTIALS_FILE", file.c_str(), 1);
  setenv("AWS_PROFILE", "other", 1);
  S3Options options = S3OptionsFromEnvironment();
  EXPECT_EQ(options.access_key_id, "AKIAFILE");
  EXPECT_EQ(options.secret_access_key, "fs");
  EXPECT_FALSE(options.path_style);
  EXPECT_EQ(options.region, "us-east-1");
  EXPECT_TRUE(options.endpoint.empty());
}

TEST(S3FileSystemTest, MakeChecksOptions) {
  S3Options options;
  auto missing = S3FileSystem::Make(options);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("AWS_ACCESS_KEY_ID"), std::string::npos);
  options.access_key_id = "AKIA";
  options.secret_access_key = "secret";
  options.part_bytes = 1 << 20;
  EXPECT_FALSE(S3FileSystem::Make(options).ok());
  options.part_bytes = 8 << 20;
  options.endpoint = "localhost:9000";
  EXPECT_FALSE(S3FileSystem::Make(options).ok());
  options.endpoint = "http://localhost:9000";
  auto fs = S3FileSystem::Make(options);
  ASSERT_TRUE(fs.ok());
  EXPECT_EQ((*fs)->Rename("s3://b/a", "s3://b/c").code(), StatusCode::kNotImplemented);
  EXPECT_EQ((*fs)->LockFile("s3://b/l").status().code(), StatusCode::kNotImplemented);
  EXPECT_FALSE((*fs)->OpenFile("/not/s3", FileMode::kRead).ok());
}

// Below one part nothing is sent: the bytes stay in the File, which reads them back.
TEST(S3FileSystemTest, BufferedWritesOverwriteAppendAndFillGapsWithZeros) {
  S3Options options;
  options.access_key_id = "AKIA";
  options.secret_access_key = "secret";
  options.endpoint = "http://127.0.0.1:9";
  auto fs = S3FileSystem::Make(options).ValueOrDie();
  auto file = fs->OpenFile("s3://b/k", FileMode::kCreate).ValueOrDie();
  auto bytes = [](std::string_view s) {
    return ByteSpan(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  };
  ASSERT_TRUE(file->WriteAt(0, bytes("hello")).ok());
  ASSERT_TRUE(file->WriteAt(3, bytes("LOWORLD")).ok());  // overwrites 2 bytes, appends 5
  ASSERT_TRUE(file->WriteAt(12, bytes("!")).ok());       // a gap of 2 bytes
  EXPECT_EQ(file->Size().ValueOrDie(), 13);
  EXPECT_EQ(file->ReadAt(0, 13).ValueOrDie()->view(), std::string_view("helLOWORLD\0\0!", 13));
}

}  // namespace
}  // namespace oxbow::storage
