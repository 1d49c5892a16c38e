// A TCP proxy between the processes of a chaos run and the database server, so that the
// harness can break the network the way production breaks it: connections dropped (FIN),
// reset (RST), stalled (bytes held, sockets open: a partition that drops packets), and new
// connections refused for a while (the server gone). One thread with poll(); commands from
// any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace txn_recovery::chaos {

class TcpProxy {
 public:
  // Listens on 127.0.0.1 (any free port) and forwards each connection to
  // `target_host:target_port`. Null with *error set when it cannot listen.
  static std::unique_ptr<TcpProxy> Start(const std::string& target_host, int target_port,
                                         std::string* error);
  ~TcpProxy();
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  int port() const { return port_; }

  // Each command applies to every open connection, or with `fraction` < 1 to a random
  // share of them chosen with `seed` (so that, e.g., a worker's connection stalls while a
  // daemon's does not). Returns how many connections it applied to.
  int Drop(double fraction = 1, std::uint64_t seed = 0);   // close both sides (FIN)
  int Reset(double fraction = 1, std::uint64_t seed = 0);  // close both sides with RST
  int Stall(double fraction = 1, std::uint64_t seed = 0);  // stop forwarding, keep open
  // Forwards again on every stalled connection.
  void Unstall();
  // While on, new connections are accepted and closed at once (and stay stalled ones
  // alone); existing connections are not touched: Drop them to cut completely.
  void Refuse(bool on);

  int open_connections() const { return open_.load(); }
  std::int64_t accepted() const { return accepted_.load(); }

 private:
  struct Conn {
    int client = -1, server = -1;
    std::string to_server, to_client;  // bytes read from one side, not yet written
    bool stalled = false;
  };
  enum class Op { kDrop, kReset, kStall };

  TcpProxy() = default;
  void Loop();
  void Close(Conn& c, bool reset);
  int Apply(Op op, double fraction, std::uint64_t seed);
  void Wake();

  std::string target_host_;
  int target_port_ = 0;
  int listen_fd_ = -1;
  int port_ = 0;
  int wake_[2] = {-1, -1};
  std::atomic<bool> stop_{false};
  std::atomic<bool> refuse_{false};
  std::atomic<int> open_{0};
  std::atomic<std::int64_t> accepted_{0};
  std::mutex mu_;  // guards conns_ (the loop holds it while it works on them)
  std::vector<Conn> conns_;
  std::thread thread_;
};

}  // namespace txn_recovery::chaos
