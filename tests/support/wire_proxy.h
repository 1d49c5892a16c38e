// A forged MongoDB-wire server for tests: a proxy in front of the real test server that
// parses every message of the wire protocol and lets a test rewrite, delay, truncate,
// inflate or drop the replies it chooses, so that the daemon meets replies no real server
// would send (duplicated keys, 20,000-deep nesting, wrong types, truncated and oversized
// messages, replies slower than the socket timeout, a refused login) while everything
// else is answered by the real server.
//
// Each accepted connection gets two threads (client -> server, server -> client) with
// blocking sockets; the request's command name, database and collection are remembered by
// requestID so that a rule sees, with each reply, the command it answers. OP_MSG and the
// legacy OP_QUERY/OP_REPLY (the driver's first handshake) are parsed; OP_COMPRESSED and
// anything else passes untouched (the URIs built here never ask for compression).
//
// The raw BSON the rules read and forge replies with is support/wire/bson.h, included here
// for them.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "support/wire/bson.h"

namespace txn_recovery::testing {

// ---- The proxy ---------------------------------------------------------------------------

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
  // Called for every reply, from the connections' threads (one at a time: the proxy holds
  // a lock around it). Must not block; use kDelay to stall.
  using Rule = std::function<Verdict(Reply*)>;

  // Listens on 127.0.0.1 (a free port) and forwards to host:port. Null with *error set
  // when it cannot listen.
  static std::unique_ptr<WireProxy> Start(const std::string& host, int port, std::string* error);
  // Forwards to the first host of a mongodb:// URI (the test server's).
  static std::unique_ptr<WireProxy> StartFor(const std::string& server_uri, std::string* error);
  ~WireProxy();
  WireProxy(const WireProxy&) = delete;
  WireProxy& operator=(const WireProxy&) = delete;

  void SetRule(Rule rule);
  int port() const { return port_; }
  // A URI reaching the server through this proxy: `server_uri`'s credentials and options,
  // this proxy as its only host, directConnection=true (a replica set member is reached
  // as itself, not through the hosts it advertises).
  std::string Uri(const std::string& server_uri) const;
  // Replies a rule changed, delayed, cut or dropped so far.
  int forged() const { return forged_.load(); }
  // Connections accepted so far.
  int accepted() const { return accepted_.load(); }

 private:
  struct Request {
    std::string command, database, collection;
  };
  struct Conn;

  WireProxy() = default;
  void AcceptLoop();
  void ClientToServer(const std::shared_ptr<Conn>& c);
  void ServerToClient(const std::shared_ptr<Conn>& c);
  bool Sleep(std::chrono::milliseconds d);  // false if the proxy stopped meanwhile

  std::string host_;
  int target_port_ = 0;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> forged_{0};
  std::atomic<int> accepted_{0};
  std::mutex rule_mu_;  // guards rule_, and is held while a rule runs
  Rule rule_;
  std::mutex mu_;  // guards conns_, threads_
  std::condition_variable cv_;
  std::vector<std::shared_ptr<Conn>> conns_;
  std::vector<std::thread> threads_;
  std::thread accept_thread_;
};

}  // namespace txn_recovery::testing
