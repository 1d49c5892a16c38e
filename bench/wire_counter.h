// WireCounter: between a client (the daemon) and a MongoDB-wire server, counts per
// collection the update commands the client sends, the update statements in them, and the
// documents the server says those statements matched. The bytes pass unchanged: it is a
// pair of hooks on the wire toolkit's forwarder (support/wire/forwarder.h), which runs them
// on its one thread. OP_MSG requests are read (the `updates` array of an `update` command,
// or its document sequence, is the statements; a findAndModify is one); the replies' `n`
// (`lastErrorObject.n` for findAndModify) are the documents matched. Every OP_MSG command
// is also timed, request to reply. Anything else, and OP_COMPRESSED, is forwarded without
// a look (the URIs built here ask for no compression).
#pragma once

#include <any>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "support/wire/forwarder.h"
#include "support/wire/message.h"

namespace txn_recovery::bench {

class WireCounter {
 public:
  struct Counts {
    std::int64_t commands = 0;    // update and findAndModify commands
    std::int64_t statements = 0;  // single-document updates in them
    std::int64_t matched = 0;     // documents they matched, as the server replied
  };

  // Listens on 127.0.0.1 (a free port) and forwards to the first host of `server_uri`, a
  // mongodb:// URI of a server speaking plain TCP. Throws std::runtime_error on failure.
  explicit WireCounter(const std::string& server_uri);
  ~WireCounter();
  WireCounter(const WireCounter&) = delete;
  WireCounter& operator=(const WireCounter&) = delete;

  // `server_uri` with this forwarder as its only host (and directConnection=true): same
  // credentials and options. Holds the password when the URI does: never put it in argv.
  std::string Uri() const { return uri_; }
  // The counts so far, by collection; and resets them.
  std::map<std::string, Counts> Take();

  // Every OP_MSG command answered so far, by command name: how many, and the time from
  // the request leaving the client to its reply reaching the forwarder (the server's time
  // plus the loopback); and resets them.
  struct Timing {
    int count = 0;
    double seconds = 0;
  };
  std::map<std::string, Timing> TakeTimings();
  // The same, by command and the collection it names ("aggregate transactions"; a getMore
  // by its `collection`); and resets them.
  std::map<std::string, Timing> TakeTimingsByCollection();

  // For tests: the statements of one OP_MSG request (its whole message), and the
  // collection it names; 0 when it is not an update or findAndModify.
  static std::int64_t Statements(const std::string& message, std::string* collection);
  // For tests: what TakeTimingsByCollection files one OP_MSG request under ("find
  // transactions", "getMore transactions", "ping"); "?" for no command.
  static std::string Target(const std::string& message);

 private:
  struct Request {
    std::string command, collection;
    std::string target;           // the command and the collection it names, for the timings
    std::int64_t statements = 0;  // > 0: an update or findAndModify
    std::chrono::steady_clock::time_point sent;
  };
  static std::int64_t Statements(const testing::OpMsg& msg, std::string* collection);
  static std::string Target(const testing::OpMsg& msg);
  std::any Noted(std::string_view request);
  void Answered(std::string_view reply, std::any* note);

  std::string uri_;
  std::mutex mu_;  // guards counts_, timings_, by_collection_
  std::map<std::string, Counts> counts_;
  std::map<std::string, Timing> timings_;
  std::map<std::string, Timing> by_collection_;
  // Last, so destroyed first: its thread is joined before the counts its hooks write go.
  std::unique_ptr<testing::WireForwarder> forwarder_;
};

}  // namespace txn_recovery::bench
