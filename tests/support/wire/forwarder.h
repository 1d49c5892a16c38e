// One forwarder between clients and a MongoDB-wire server, for every tool that has to
// stand on the wire: the chaos proxy (tests/chaos/tcp_proxy.h) breaks connections, the
// forged wire server (support/wire_proxy.h) rewrites replies, the bench's counter
// (bench/wire_counter.h) counts and times commands. Each of them is a set of hooks here.
//
// Contract:
// - Threads: Start launches one thread, joined by the destructor. It accepts, connects to
//   the server, moves every connection's bytes (poll()) and runs every hook, one call at a
//   time. A hook must not block (a reply is held back by its verdict's delay, never by
//   sleeping) and must not call the forwarder. The control calls below (Drop, Reset, Stall,
//   Unstall, Refuse, the counters) are safe from any thread.
// - Ownership: the forwarder owns every socket. A connection is a client socket and the
//   server socket opened for it when it was accepted; when either side closes or fails,
//   both are closed (FIN), so that the other side sees what a direct connection would.
//   The hooks are owned too, and whatever they capture must outlive the forwarder.
// - What passes untouched: without hooks the bytes are forwarded as they come, never
//   framed (a TLS session passes as well). With hooks the stream is cut into whole messages
//   (a length under 16 bytes or over kMaxMessageSize ends the connection); each goes to a
//   hook and is then forwarded byte for byte, unless the reply hook rewrote it. Nothing is
//   decompressed: an OP_COMPRESSED message reaches the hooks as it is.
#pragma once

#include <any>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace txn_recovery::testing {

// The parts of a mongodb:// URI a forwarder needs: where its first host is, and what to
// keep when the URI is pointed at the forwarder instead.
struct MongoUriParts {
  std::string userinfo;  // "user:pass@" or ""
  std::string host;      // the first host, without brackets
  int port = 27017;
  bool several_hosts = false;
  std::string database;  // the path's database (the default authSource), or ""
  std::string options;   // after '?', without replicaSet and directConnection
};
// nullopt unless `uri` is mongodb:// with a numeric port (or none).
std::optional<MongoUriParts> SplitMongoUri(const std::string& uri);
// The URI reaching `server` through a forwarder on 127.0.0.1:`port`: the same credentials,
// database and options, directConnection=true (a replica set member is then used as itself,
// not through the hosts it advertises, which would bypass the forwarder).
std::string ForwardedUri(const MongoUriParts& server, int port);

class WireForwarder {
 public:
  // What to do with a reply once its hook has seen it.
  struct ReplyVerdict {
    // Holds this reply (and those after it on its connection) back so long.
    std::chrono::milliseconds delay{0};
    enum class Then {
      kContinue,
      kClose,         // once it is sent, close the connection
      kStallReplies,  // once it is sent, send the client nothing more (requests still pass)
    } then = Then::kContinue;
  };
  struct Hooks {
    // Each request (a whole message from a client), before it is forwarded. What it returns
    // is kept with the request's requestID and handed to the reply hook of the replies that
    // answer it (by responseTo).
    std::function<std::any(std::string_view request)> on_request;
    // Each reply (a whole message from the server), before it is forwarded. It may rewrite
    // `message`, or empty it to send nothing. `note` is what on_request returned for the
    // request it answers (an empty std::any when none); the hook may change it. The note is
    // forgotten after the reply, unless the reply is an OP_MSG with moreToCome (more replies
    // answer the same request).
    std::function<ReplyVerdict(std::string* message, std::any* note)> on_reply;
  };

  // Listens on 127.0.0.1 (a free port) and forwards each connection to host:port. Null with
  // *error set when it cannot listen.
  static std::unique_ptr<WireForwarder> Start(const std::string& host, int port, Hooks hooks,
                                              std::string* error);
  ~WireForwarder();
  WireForwarder(const WireForwarder&) = delete;
  WireForwarder& operator=(const WireForwarder&) = delete;

  int port() const { return port_; }

  // Each applies to every open connection, or with `fraction` < 1 to a share of them drawn
  // with `seed` (the same connections and seed draw the same share). Returns how many it
  // applied to.
  int Drop(double fraction = 1, std::uint64_t seed = 0);   // close both sides (FIN)
  int Reset(double fraction = 1, std::uint64_t seed = 0);  // close both sides with RST
  int Stall(double fraction = 1, std::uint64_t seed = 0);  // stop forwarding, keep open
  // Forwards again on every stalled connection.
  void Unstall();
  // While on, new connections are accepted and closed at once; open ones are left alone.
  void Refuse(bool on);

  int open_connections() const { return open_.load(); }
  std::int64_t accepted() const { return accepted_.load(); }

 private:
  struct Conn;
  enum class Op { kDrop, kReset, kStall };

  WireForwarder() = default;
  void Loop();
  void Accept();
  void Pump(Conn& c, std::chrono::steady_clock::time_point now);
  void Frame(Conn& c, bool from_client);
  int Apply(Op op, double fraction, std::uint64_t seed);
  void Wake();

  std::string host_;
  int target_port_ = 0;
  int listen_fd_ = -1;
  int port_ = 0;
  int wake_[2] = {-1, -1};
  Hooks hooks_;
  bool framed_ = false;  // whether any hook is set
  std::atomic<bool> stop_{false};
  std::atomic<bool> refuse_{false};
  std::atomic<int> open_{0};
  std::atomic<std::int64_t> accepted_{0};
  std::mutex mu_;  // guards conns_ (the loop holds it while it works on them)
  std::vector<std::unique_ptr<Conn>> conns_;
  std::thread thread_;
};

}  // namespace txn_recovery::testing
