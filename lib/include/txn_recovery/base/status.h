// Status: the result of every fallible call in the core library.
//
// Modelled on LevelDB's Status: a cheap value (one pointer when OK) carrying a code
// and a human-readable message. Callers branch on the code, never on the message.
// Thread-safety: a Status is an immutable value; copies may cross threads freely.
// [[nodiscard]]: an ignored error is how a recovery daemon loses money silently. Where
// ignoring one is right (a best-effort release), the caller writes (void) and says why.
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace txn_recovery {

class [[nodiscard]] Status {
 public:
  enum class Code {
    kOk = 0,
    kNotFound,         // the document or collection asked for does not exist
    kInvalidArgument,  // the caller passed something unusable (bad configuration, bad filter)
    kMalformed,        // a stored document does not fit its profile; never guessed at
    kConflict,         // a guarded write lost a race (CAS miss, lease held by someone else)
    kUnavailable,      // the database cannot be reached right now; retrying may help
    // The database refused our credentials. A refinement of kUnavailable: the database
    // cannot be used right now and retrying may help (the credential is rotated, the user
    // re-created), so IsUnavailable() is true for it too and every "retry later, count
    // nothing against a transaction" rule applies unchanged; IsUnauthenticated() tells
    // the operator which of the two to fix.
    kUnauthenticated,
    // Logged in, but the user lacks a privilege a request needs (a role that may not update
    // the participants). Also a refinement of kUnavailable, for the same reason: nothing a
    // transaction did, and it ends once an operator grants the role.
    kPermissionDenied,
    kServerError,  // the database answered with an error (permission, write error)
    kAborted,      // the operation was deliberately stopped (shutdown, injected crash)
  };

  Status() noexcept = default;

  static Status Ok() { return Status(); }
  static Status NotFound(std::string_view msg) { return Status(Code::kNotFound, msg); }
  static Status InvalidArgument(std::string_view msg) {
    return Status(Code::kInvalidArgument, msg);
  }
  static Status Malformed(std::string_view msg) { return Status(Code::kMalformed, msg); }
  static Status Conflict(std::string_view msg) { return Status(Code::kConflict, msg); }
  static Status Unavailable(std::string_view msg) { return Status(Code::kUnavailable, msg); }
  static Status Unauthenticated(std::string_view msg) {
    return Status(Code::kUnauthenticated, msg);
  }
  static Status PermissionDenied(std::string_view msg) {
    return Status(Code::kPermissionDenied, msg);
  }
  static Status ServerError(std::string_view msg) { return Status(Code::kServerError, msg); }
  static Status Aborted(std::string_view msg) { return Status(Code::kAborted, msg); }

  bool ok() const noexcept { return state_ == nullptr; }
  Code code() const noexcept { return state_ ? state_->code : Code::kOk; }
  bool IsNotFound() const noexcept { return code() == Code::kNotFound; }
  bool IsInvalidArgument() const noexcept { return code() == Code::kInvalidArgument; }
  bool IsMalformed() const noexcept { return code() == Code::kMalformed; }
  bool IsConflict() const noexcept { return code() == Code::kConflict; }
  // True for kUnavailable and its refinements kUnauthenticated and kPermissionDenied.
  bool IsUnavailable() const noexcept {
    return code() == Code::kUnavailable || code() == Code::kUnauthenticated ||
           code() == Code::kPermissionDenied;
  }
  bool IsUnauthenticated() const noexcept { return code() == Code::kUnauthenticated; }
  bool IsPermissionDenied() const noexcept { return code() == Code::kPermissionDenied; }
  bool IsServerError() const noexcept { return code() == Code::kServerError; }
  bool IsAborted() const noexcept { return code() == Code::kAborted; }

  // The message without the code name; empty for OK.
  const std::string& message() const noexcept;
  // "OK" or "<CodeName>: <message>".
  std::string ToString() const;
  static std::string_view CodeName(Code code) noexcept;

  // The same code with "<context>: " before the message (OK stays OK), so that a caller
  // can say where an error happened without losing what kind of error it is.
  Status WithContext(std::string_view context) const {
    if (ok()) return *this;
    return Status(code(), std::string(context) + ": " + message());
  }

 private:
  struct State {
    Code code;
    std::string message;
  };
  Status(Code code, std::string_view msg)
      : state_(std::make_shared<const State>(State{code, std::string(msg)})) {}

  std::shared_ptr<const State> state_;  // null means OK
};

}  // namespace txn_recovery
