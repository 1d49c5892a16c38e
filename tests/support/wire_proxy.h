// A forged MongoDB-wire server for tests: a proxy in front of the real test server that
// parses every message of the wire protocol and lets a test rewrite, delay, truncate,
// inflate or drop the replies it chooses, so that the daemon meets replies no real server
// would send (duplicated keys, 20,000-deep nesting, wrong types, truncated and oversized
// messages, replies slower than the socket timeout, a refused login) while everything
// else is answered by the real server.
//
// It is a reply hook on the wire toolkit's forwarder (support/wire/forwarder.h), whose one
// thread runs the rules; the request's command name, database and collection are noted
// with it so that a rule sees, with each reply, the command it answers. OP_MSG and the
// legacy OP_QUERY/OP_REPLY (the driver's first handshake) are parsed; OP_COMPRESSED and
// anything else passes untouched (the URIs built here never ask for compression).
//
// The raw BSON the rules read and forge replies with is support/wire/bson.h, included here
// for them.
#pragma once

#include <any>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "support/wire/bson.h"
#include "support/wire/forwarder.h"

namespace txn_recovery::testing {

class WireProxy {
 public:
  // One reply, with what the rule needs to know of the request it answers.
  struct Reply {
    std::string command;     // the first key of the request ("find", "saslStart", "ping", ...)
    std::string database;    // the request's $db (OP_MSG) or its namespace's database
    std::string collection;  // the command's value when it is a string (find, update, ...)
    std::string body;        // the reply's document (raw BSON); a rule may replace it
  };
  enum class Fate {
    kForward,           // send `body` (rewritten or not)
    kDelay,             // send it after `delay` (a stalled server)
    kTruncateAndClose,  // send the first half of the message, then close the connection
    kTruncateAndStall,  // send the first half, then nothing more (the socket stays open)
    kOversized,         // send a header announcing a 64 MiB message, then close
    kClose,             // close the connection without answering
  };
  struct Verdict {
    Fate fate = Fate::kForward;
    std::chrono::milliseconds delay{0};
  };
  // Called for every reply, from the forwarder's thread (one at a time). Must not block;
  // use kDelay to stall.
  using Rule = std::function<Verdict(Reply*)>;

  // Listens on 127.0.0.1 (a free port) and forwards to host:port. Null with *error set
  // when it cannot listen.
  static std::unique_ptr<WireProxy> Start(const std::string& host, int port, std::string* error);
  // Forwards to the first host of a mongodb:// URI (the test server's).
  static std::unique_ptr<WireProxy> StartFor(const std::string& server_uri, std::string* error);
  ~WireProxy() = default;
  WireProxy(const WireProxy&) = delete;
  WireProxy& operator=(const WireProxy&) = delete;

  void SetRule(Rule rule);
  int port() const { return forwarder_->port(); }
  // A URI reaching the server through this proxy: `server_uri`'s credentials, database and
  // options,
  // this proxy as its only host, directConnection=true (a replica set member is reached
  // as itself, not through the hosts it advertises).
  std::string Uri(const std::string& server_uri) const;
  // Replies a rule changed, delayed, cut or dropped so far.
  int forged() const { return forged_.load(); }
  // Connections accepted so far.
  int accepted() const { return static_cast<int>(forwarder_->accepted()); }

 private:
  struct Request {
    std::string command, database, collection;
  };

  WireProxy() = default;
  static std::any Note(std::string_view request);
  WireForwarder::ReplyVerdict Answer(std::string* message, std::any* note);

  std::atomic<int> forged_{0};
  std::mutex rule_mu_;  // guards rule_, and is held while a rule runs
  Rule rule_;
  // Last, so destroyed first: its thread is joined before the rule it calls goes.
  std::unique_ptr<WireForwarder> forwarder_;
};

}  // namespace txn_recovery::testing
