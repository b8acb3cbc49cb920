// SaslHandshake and SaslAuthenticate: the SASL login of a connection under --auth (PLAIN or
// SCRAM-SHA-256), before anything but ApiVersions.
#include <spdlog/spdlog.h>

#include <chrono>

#include "oxbow/kafka/broker_internal.h"
#include "oxbow/metrics/metrics.h"

namespace oxbow::kafka::internal {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::string_view kSaslPlain = "PLAIN";
constexpr std::string_view kSaslScram = "SCRAM-SHA-256";

// What a client is told of a failed login: the lockout says so and when to retry (the
// Authenticator's message); any other failure gives nothing away.
std::string LoginFailureMessage(const Status& status, std::string_view otherwise) {
  if (status.code() == StatusCode::kResourceExhausted) {
    return "Authentication failed: " + status.message();
  }
  return "Authentication failed: " + std::string(otherwise);
}

}  // namespace

Result<msg::SaslHandshakeResponse> Broker::SaslHandshake(msg::SaslHandshakeRequest& request,
                                                         RequestContext& ctx) {
  Session& session = ctx.session;
  msg::SaslHandshakeResponse response;
  if (!auth_required()) {
    // Kafka's PLAINTEXT and SSL listeners know no SASL mechanism either.
    response.error_code = ErrorCode::kUnsupportedSaslMechanism;
    session.close_after_response = true;
    return response;
  }
  response.mechanisms = {std::string(kSaslPlain), std::string(kSaslScram)};
  if (session.user || !session.mechanism.empty()) {
    response.error_code = ErrorCode::kIllegalSaslState;  // no re-authentication
    session.close_after_response = true;
  } else if (request.mechanism != kSaslPlain && request.mechanism != kSaslScram) {
    response.error_code = ErrorCode::kUnsupportedSaslMechanism;
    session.close_after_response = true;
  } else {
    session.mechanism = request.mechanism;
  }
  return response;
}

Result<msg::SaslAuthenticateResponse> Broker::SaslAuthenticate(
    msg::SaslAuthenticateRequest& request, RequestContext& ctx) {
  Session& session = ctx.session;
  msg::SaslAuthenticateResponse response;
  auto fail = [&](ErrorCode error, std::string message) {
    response.error_code = error;
    response.error_message = std::move(message);
    response.auth_bytes.clear();
    session.close_after_response = true;  // as Kafka does after a failed login
    return response;
  };
  if (!auth_required() || session.mechanism.empty() || session.user) {
    return fail(ErrorCode::kIllegalSaslState,
                "SaslAuthenticate needs a SaslHandshake first (and only one login per connection)");
  }
  auto login = [&](auth::User user) {
    spdlog::debug("kafka: {} logged in from {} with {}", user.name, session.client_host,
                  session.mechanism);
    session.user = std::move(user);
    session.user_loaded = Clock::now();
  };
  if (session.mechanism == kSaslPlain) {
    auto credentials = auth::ParseSaslPlain(request.auth_bytes);
    if (!credentials.ok()) {
      node_->metrics().AddError("sasl", StatusCodeName(credentials.status().code()));
      return fail(ErrorCode::kSaslAuthenticationFailed, credentials.status().message());
    }
    auto user = options_.authenticator->CheckPassword(credentials->first, credentials->second);
    if (!user.ok()) {
      spdlog::warn("kafka: failed SASL/PLAIN login from {}", session.client_host);
      node_->metrics().AddError("sasl", StatusCodeName(user.status().code()));
      return fail(ErrorCode::kSaslAuthenticationFailed,
                  LoginFailureMessage(user.status(), "invalid username or password"));
    }
    login(std::move(user).ValueOrDie());
    return response;
  }
  if (!session.scram) {
    session.scram = std::make_unique<auth::ScramSha256Server>(options_.authenticator);
    auto first = session.scram->ClientFirst(request.auth_bytes);
    if (!first.ok()) {
      spdlog::warn("kafka: failed SASL/SCRAM-SHA-256 login from {}", session.client_host);
      node_->metrics().AddError("sasl", StatusCodeName(first.status().code()));
      return fail(ErrorCode::kSaslAuthenticationFailed,
                  LoginFailureMessage(first.status(), first.status().message()));
    }
    response.auth_bytes = std::move(first).ValueOrDie();
    return response;
  }
  auto final_message = session.scram->ClientFinal(request.auth_bytes);
  if (!final_message.ok()) {
    spdlog::warn("kafka: failed SASL/SCRAM-SHA-256 login from {}", session.client_host);
    node_->metrics().AddError("sasl", StatusCodeName(final_message.status().code()));
    return fail(ErrorCode::kSaslAuthenticationFailed,
                LoginFailureMessage(final_message.status(),
                                    "invalid credentials with SASL mechanism SCRAM-SHA-256"));
  }
  response.auth_bytes = std::move(final_message->first);
  login(std::move(final_message->second));
  session.scram.reset();
  return response;
}

}  // namespace oxbow::kafka::internal
