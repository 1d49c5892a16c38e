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
// The BSON helpers below build and take apart raw BSON without the driver (the test
// support links no libmongoc; duplicated keys and absurd nesting are exactly what a
// driver's builder would refuse to produce).
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

namespace txn_recovery::testing {

// ---- Raw BSON ----------------------------------------------------------------------------

enum BsonType : std::uint8_t {
  kBsonDouble = 0x01,
  kBsonString = 0x02,
  kBsonDocument = 0x03,
  kBsonArray = 0x04,
  kBsonBool = 0x08,
  kBsonDateTime = 0x09,
  kBsonNull = 0x0A,
  kBsonInt32 = 0x10,
  kBsonInt64 = 0x12,
};

// Builds one document, field by field, in order; nothing stops a key from repeating.
class BsonWriter {
 public:
  BsonWriter& Int32(std::string_view key, std::int32_t v);
  BsonWriter& Int64(std::string_view key, std::int64_t v);
  BsonWriter& Double(std::string_view key, double v);
  BsonWriter& String(std::string_view key, std::string_view v);
  BsonWriter& Bool(std::string_view key, bool v);
  BsonWriter& Null(std::string_view key);
  BsonWriter& DateTime(std::string_view key, std::int64_t millis);
  BsonWriter& Document(std::string_view key, std::string_view document);  // raw document bytes
  BsonWriter& Array(std::string_view key, std::string_view document);     // keys "0", "1", ...
  // Any element: its type byte and the raw bytes of its value.
  BsonWriter& Element(std::uint8_t type, std::string_view key, std::string_view value);
  std::string Finish() const;  // the document: length, elements, terminating zero

 private:
  std::string elements_;
};

struct BsonElement {
  std::uint8_t type = 0;
  std::string key;
  std::string value;  // the raw bytes of the value (for documents and arrays, the document)
};

// The elements of `document` in order; nullopt if it is not well-formed BSON.
std::optional<std::vector<BsonElement>> ReadElements(std::string_view document);
// The document made of `elements` (the inverse of ReadElements).
std::string WriteElements(const std::vector<BsonElement>& elements);
// The value of the first element named `key`, if any.
std::optional<BsonElement> FindElement(std::string_view document, std::string_view key);
// The string held by `key`, or nullopt.
std::optional<std::string> StringField(std::string_view document, std::string_view key);
// A document nested `depth` levels deep ({a: {a: ... {}}}), as raw bytes.
std::string NestedDocument(int depth);
// Calls `edit` on every document of a cursor reply's batch (cursor.firstBatch of find and
// aggregate, cursor.nextBatch of getMore); `edit` returns whether it changed the document.
// Returns whether any was changed (and `reply_body` rewritten).
bool EditCursorBatch(std::string* reply_body, const std::function<bool(std::string* doc)>& edit);
// Whether `document`'s _id is the integer `id` (int32 or int64) or the string `id`.
bool HasId(std::string_view document, std::int64_t id);
bool HasId(std::string_view document, std::string_view id);

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
