#include "oxbow/http/http.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

namespace oxbow::http {
namespace {

void Hello(httplib::Server& server) {
  server.Get("/hello", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("hi", "text/plain");
  });
}

TEST(HttpTest, ServesAndRefusesABusyPortAndBadAddresses) {
  auto listener = Listener::Start("tests", "127.0.0.1:0", {}, Hello);
  ASSERT_TRUE(listener.ok()) << listener.status().ToString();
  httplib::Client client("127.0.0.1", (*listener)->port());
  auto res = client.Get("/hello");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->body, "hi");
  auto busy =
      Listener::Start("tests", "127.0.0.1:" + std::to_string((*listener)->port()), {}, Hello);
  EXPECT_TRUE(busy.status().IsIOError());
  EXPECT_NE(busy.status().message().find("cannot listen for tests on"), std::string::npos);
  EXPECT_TRUE(Listener::Start("tests", "nohost", {}, Hello).status().IsInvalid());
  EXPECT_TRUE(Listener::Start("tests", "h:70000", {}, Hello).status().IsInvalid());
  EXPECT_EQ(ParseListen("x", "[::1]:8")->first, "::1");
  (*listener)->Stop();
  (*listener)->Stop();
}

TEST(HttpTest, TlsAndMutualTls) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("oxbow-http-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string d = dir.string();
  const std::string make =
      "cd " + d +
      " && openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost"
      " -addext subjectAltName=IP:127.0.0.1 -keyout key.pem -out cert.pem 2>/dev/null";
  ASSERT_EQ(std::system(make.c_str()), 0);
  TlsOptions tls{d + "/cert.pem", d + "/key.pem", ""};
  auto listener = Listener::Start("tests", "127.0.0.1:0", tls, Hello);
  ASSERT_TRUE(listener.ok()) << listener.status().ToString();
  httplib::SSLClient client("127.0.0.1", (*listener)->port());
  client.set_ca_cert_path((d + "/cert.pem").c_str());
  client.enable_server_certificate_verification(true);
  auto res = client.Get("/hello");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->body, "hi");
  httplib::Client plain("127.0.0.1", (*listener)->port());
  EXPECT_FALSE(plain.Get("/hello"));

  // Mutual TLS: a client without a certificate gets no answer, one with it does.
  TlsOptions mutual{d + "/cert.pem", d + "/key.pem", d + "/cert.pem"};
  auto strict = Listener::Start("tests", "127.0.0.1:0", mutual, Hello);
  ASSERT_TRUE(strict.ok()) << strict.status().ToString();
  httplib::SSLClient anonymous("127.0.0.1", (*strict)->port());
  anonymous.enable_server_certificate_verification(false);
  EXPECT_FALSE(anonymous.Get("/hello"));
  httplib::SSLClient known("127.0.0.1", (*strict)->port(), d + "/cert.pem", d + "/key.pem");
  known.enable_server_certificate_verification(false);
  auto ok = known.Get("/hello");
  ASSERT_TRUE(ok) << httplib::to_string(ok.error());
  EXPECT_EQ(ok->body, "hi");

  EXPECT_TRUE(Listener::Start("tests", "127.0.0.1:0", {d + "/cert.pem", "", ""}, Hello)
                  .status()
                  .IsInvalid());
  EXPECT_TRUE(Listener::Start("tests", "127.0.0.1:0", {d + "/nope.pem", d + "/key.pem", ""}, Hello)
                  .status()
                  .IsInvalid());
  EXPECT_TRUE(Listener::Start("tests", "127.0.0.1:0", {d + "/key.pem", d + "/cert.pem", ""}, Hello)
                  .status()
                  .IsInvalid());
  std::filesystem::remove_all(dir);
}

TEST(PathSegmentsTest, DecodesPercentEscapes) {
  EXPECT_EQ(PathSegments("/subjects/a%2Fb/versions"),
            (std::vector<std::string>{"subjects", "a/b", "versions"}));
  EXPECT_EQ(PathSegments("/"), std::vector<std::string>{});
  EXPECT_EQ(PathSegments("/subjects/%zz"), std::nullopt);
  EXPECT_EQ(PathSegments("/subjects/%2"), std::nullopt);
}

}  // namespace
}  // namespace oxbow::http
