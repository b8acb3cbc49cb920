#include "oxbow/common/status.h"

#include <cstdint>

namespace oxbow {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kInvalid: return "Invalid";
    case StatusCode::kIOError: return "IOError";
    case StatusCode::kNotFound: return "NotFound";
    case StatusCode::kAlreadyExists: return "AlreadyExists";
    case StatusCode::kOutOfRange: return "OutOfRange";
    case StatusCode::kCorruption: return "Corruption";
    case StatusCode::kNotImplemented: return "NotImplemented";
    case StatusCode::kResourceExhausted: return "ResourceExhausted";
    case StatusCode::kInternal: return "Internal";
    case StatusCode::kCancelled: return "Cancelled";
    case StatusCode::kUnauthenticated: return "Unauthenticated";
    case StatusCode::kPermissionDenied: return "PermissionDenied";
    case StatusCode::kUnavailable: return "Unavailable";
    case StatusCode::kAborted: return "Aborted";
  }
  return "Unknown";
}

std::string Truncate(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  size_t cut = max_bytes;
  // Back up over continuation bytes (10xxxxxx), so no character is split.
  while (cut > 0 && (static_cast<uint8_t>(text[cut]) & 0xc0) == 0x80) --cut;
  std::string out(text.substr(0, cut));
  out += "\u2026(";  // appended step by step: gcc 12 misreports "a" + std::string (-Wrestrict)
  out += std::to_string(text.size());
  out += " bytes)";
  return out;
}

std::string Quote(std::string_view text) {
  std::string out = "'";
  out += Truncate(text, kMaxQuotedBytes);
  out += '\'';
  return out;
}

Status::Status(StatusCode code, std::string message) {
  if (code != StatusCode::kOk) {
    state_ = std::make_shared<const State>(State{code, std::move(message)});
  }
}

const std::string& Status::message() const {
  static const std::string kEmpty;
  return state_ ? state_->message : kEmpty;
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string out(StatusCodeName(code()));
  out += ": ";
  out += state_->message;
  return out;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  std::string msg(context);
  msg += ": ";
  msg += state_->message;
  return Status(code(), std::move(msg));
}

}  // namespace oxbow
