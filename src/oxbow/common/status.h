// Status and Result<T>: the error model of every Oxbow module.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace oxbow {

enum class StatusCode : int {
  kOk = 0,
  kInvalid = 1,            // bad argument or malformed input
  kIOError = 2,            // the operating system said no
  kNotFound = 3,           // a named thing does not exist
  kAlreadyExists = 4,      // a named thing exists already
  kOutOfRange = 5,         // an offset or index outside the valid range
  kCorruption = 6,         // stored bytes failed a check
  kNotImplemented = 7,     // valid, but not supported by this build
  kResourceExhausted = 8,  // disk full, memory, quotas
  kInternal = 9,           // a bug in Oxbow
  kCancelled = 10,         // the caller gave up
  kUnauthenticated = 11,   // no valid credentials
  kPermissionDenied = 12,  // credentials valid, access not granted
  kUnavailable = 13,  // cannot serve now (not the leader, too few replicas): retry, maybe elsewhere
  kAborted = 14,      // a conditional update lost a race (a version check): re-read, retry
};

std::string_view StatusCodeName(StatusCode code);

// Names and values a user supplied are echoed in messages at most this many bytes (docs/api.md).
inline constexpr size_t kMaxQuotedBytes = 256;

// `text` itself when it has at most `max_bytes` bytes; else its first bytes, cut at a UTF-8
// character boundary, followed by "…(N bytes)" with N its full size.
std::string Truncate(std::string_view text, size_t max_bytes);
// `text` in single quotes for a message, truncated to kMaxQuotedBytes: 'ns.t', 'xxx…(20000 bytes)'.
std::string Quote(std::string_view text);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message);

  static Status OK() { return Status(); }
  static Status Invalid(std::string msg) { return {StatusCode::kInvalid, std::move(msg)}; }
  static Status IOError(std::string msg) { return {StatusCode::kIOError, std::move(msg)}; }
  static Status NotFound(std::string msg) { return {StatusCode::kNotFound, std::move(msg)}; }
  static Status AlreadyExists(std::string msg) {
    return {StatusCode::kAlreadyExists, std::move(msg)};
  }
  static Status OutOfRange(std::string msg) { return {StatusCode::kOutOfRange, std::move(msg)}; }
  static Status Corruption(std::string msg) { return {StatusCode::kCorruption, std::move(msg)}; }
  static Status NotImplemented(std::string msg) {
    return {StatusCode::kNotImplemented, std::move(msg)};
  }
  static Status ResourceExhausted(std::string msg) {
    return {StatusCode::kResourceExhausted, std::move(msg)};
  }
  static Status Internal(std::string msg) { return {StatusCode::kInternal, std::move(msg)}; }
  static Status Cancelled(std::string msg) { return {StatusCode::kCancelled, std::move(msg)}; }
  static Status Unauthenticated(std::string msg) {
    return {StatusCode::kUnauthenticated, std::move(msg)};
  }
  static Status PermissionDenied(std::string msg) {
    return {StatusCode::kPermissionDenied, std::move(msg)};
  }
  static Status Unavailable(std::string msg) { return {StatusCode::kUnavailable, std::move(msg)}; }
  static Status Aborted(std::string msg) { return {StatusCode::kAborted, std::move(msg)}; }

  bool ok() const { return state_ == nullptr; }
  StatusCode code() const { return state_ ? state_->code : StatusCode::kOk; }
  const std::string& message() const;
  // "Invalid: message", or "OK".
  std::string ToString() const;

  // Returns a copy whose message is prefixed with `context: `.
  Status WithContext(std::string_view context) const;

  bool IsInvalid() const { return code() == StatusCode::kInvalid; }
  bool IsIOError() const { return code() == StatusCode::kIOError; }
  bool IsNotFound() const { return code() == StatusCode::kNotFound; }
  bool IsOutOfRange() const { return code() == StatusCode::kOutOfRange; }
  bool IsCorruption() const { return code() == StatusCode::kCorruption; }

 private:
  struct State {
    StatusCode code;
    std::string message;
  };
  std::shared_ptr<const State> state_;  // null means OK; copies share the message
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : storage_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Status status) : storage_(std::move(status)) {  // NOLINT
    if (std::get<Status>(storage_).ok()) {
      storage_ = Status::Internal("Result constructed from an OK status");
    }
  }

  bool ok() const { return std::holds_alternative<T>(storage_); }
  Status status() const { return ok() ? Status::OK() : std::get<Status>(storage_); }

  const T& ValueOrDie() const& { return std::get<T>(storage_); }
  T& ValueOrDie() & { return std::get<T>(storage_); }
  T ValueOrDie() && { return std::move(std::get<T>(storage_)); }
  T MoveValueUnsafe() { return std::move(std::get<T>(storage_)); }

  const T& operator*() const& { return ValueOrDie(); }
  T& operator*() & { return ValueOrDie(); }
  const T* operator->() const { return &std::get<T>(storage_); }
  T* operator->() { return &std::get<T>(storage_); }

 private:
  std::variant<T, Status> storage_;
};

namespace internal {
inline Status GenericToStatus(const Status& st) { return st; }
template <typename T>
Status GenericToStatus(const Result<T>& r) {
  return r.status();
}
}  // namespace internal

}  // namespace oxbow

#define OXBOW_CONCAT_IMPL(a, b) a##b
#define OXBOW_CONCAT(a, b) OXBOW_CONCAT_IMPL(a, b)

// Returns early from the enclosing function when `expr` (a Status or Result) is not OK.
#define RETURN_NOT_OK(expr)                                           \
  do {                                                                \
    ::oxbow::Status _st = ::oxbow::internal::GenericToStatus((expr)); \
    if (!_st.ok()) return _st;                                        \
  } while (false)

#define OXBOW_ASSIGN_OR_RAISE_IMPL(tmp, lhs, rexpr) \
  auto tmp = (rexpr);                               \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(tmp).ValueOrDie()

// `lhs = value of rexpr`, or return its error.
#define ASSIGN_OR_RAISE(lhs, rexpr) \
  OXBOW_ASSIGN_OR_RAISE_IMPL(OXBOW_CONCAT(_result_, __COUNTER__), lhs, rexpr)
