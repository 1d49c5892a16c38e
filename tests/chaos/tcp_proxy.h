// A TCP proxy between the processes of a chaos run and the database server, so that the
// harness can break the network the way production breaks it: connections dropped (FIN),
// reset (RST), stalled (bytes held, sockets open: a partition that drops packets), and new
// connections refused for a while (the server gone). The wire toolkit's forwarder without
// hooks (support/wire/forwarder.h): one thread, the bytes passed as they come, unread (a
// TLS session passes too); commands from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "support/wire/forwarder.h"

namespace txn_recovery::chaos {

class TcpProxy {
 public:
  // Listens on 127.0.0.1 (any free port) and forwards each connection to
  // `target_host:target_port`. Null with *error set when it cannot listen.
  static std::unique_ptr<TcpProxy> Start(const std::string& target_host, int target_port,
                                         std::string* error) {
    auto forwarder = testing::WireForwarder::Start(target_host, target_port, {}, error);
    if (!forwarder) {
      *error = "proxy: " + *error;
      return nullptr;
    }
    return std::unique_ptr<TcpProxy>(new TcpProxy(std::move(forwarder)));
  }

  int port() const { return forwarder_->port(); }

  // Each command applies to every open connection, or with `fraction` < 1 to a random
  // share of them chosen with `seed` (so that, e.g., a worker's connection stalls while a
  // daemon's does not). Returns how many connections it applied to.
  int Drop(double fraction = 1, std::uint64_t seed = 0) {  // close both sides (FIN)
    return forwarder_->Drop(fraction, seed);
  }
  int Reset(double fraction = 1, std::uint64_t seed = 0) {  // close both sides with RST
    return forwarder_->Reset(fraction, seed);
  }
  int Stall(double fraction = 1, std::uint64_t seed = 0) {  // stop forwarding, keep open
    return forwarder_->Stall(fraction, seed);
  }
  // Forwards again on every stalled connection.
  void Unstall() { forwarder_->Unstall(); }
  // While on, new connections are accepted and closed at once (and stay stalled ones
  // alone); existing connections are not touched: Drop them to cut completely.
  void Refuse(bool on) { forwarder_->Refuse(on); }

  int open_connections() const { return forwarder_->open_connections(); }
  std::int64_t accepted() const { return forwarder_->accepted(); }

 private:
  explicit TcpProxy(std::unique_ptr<testing::WireForwarder> forwarder)
      : forwarder_(std::move(forwarder)) {}

  std::unique_ptr<testing::WireForwarder> forwarder_;
};

}  // namespace txn_recovery::chaos
