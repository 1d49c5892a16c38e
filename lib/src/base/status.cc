#include "txn_recovery/base/status.h"

namespace txn_recovery {

const std::string& Status::message() const noexcept {
  static const std::string kEmpty;
  return state_ ? state_->message : kEmpty;
}

std::string_view Status::CodeName(Code code) noexcept {
  switch (code) {
    case Code::kOk:
      return "OK";
    case Code::kNotFound:
      return "NotFound";
    case Code::kInvalidArgument:
      return "InvalidArgument";
    case Code::kMalformed:
      return "Malformed";
    case Code::kConflict:
      return "Conflict";
    case Code::kUnavailable:
      return "Unavailable";
    case Code::kUnauthenticated:
      return "Unauthenticated";
    case Code::kPermissionDenied:
      return "PermissionDenied";
    case Code::kServerError:
      return "ServerError";
    case Code::kAborted:
      return "Aborted";
  }
  return "Unknown";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string out(CodeName(code()));
  out += ": ";
  out += state_->message;
  return out;
}

}  // namespace txn_recovery
