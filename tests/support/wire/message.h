// The MongoDB wire protocol's framing and the opcodes the test and bench tools look into:
// OP_MSG (its flag bits, the body section and the document sequences), and the legacy
// OP_QUERY / OP_REPLY that a driver's first handshake may still use. Plain functions on
// whole messages (header included): no state, safe from any thread. A parser answers
// nullopt for anything not well-formed, and its views point into the message it was given.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace txn_recovery::testing {

constexpr std::int32_t kOpReply = 1;
constexpr std::int32_t kOpQuery = 2004;
constexpr std::int32_t kOpCompressed = 2012;
constexpr std::int32_t kOpMsg = 2013;

constexpr std::size_t kMessageHeaderSize = 16;
// Larger than any message a server accepts (48 MB): a length beyond it is garbage or a
// forged announcement, never a message to wait for.
constexpr std::size_t kMaxMessageSize = 64u << 20;

// OP_MSG flag bits.
constexpr std::uint32_t kChecksumPresent = 1u << 0;
constexpr std::uint32_t kMoreToCome = 1u << 1;

struct MessageHeader {
  std::int32_t length = 0;
  std::int32_t request_id = 0;
  std::int32_t response_to = 0;
  std::int32_t op_code = 0;
};
// The header at the start of `bytes` (which holds at least kMessageHeaderSize bytes), or
// nullopt when fewer are there. The length is not checked: that is the framer's call.
std::optional<MessageHeader> ReadHeader(std::string_view bytes);

struct OpMsg {
  std::uint32_t flags = 0;
  std::string_view body;          // the kind 0 section's document
  std::size_t body_offset = 0;    // where it starts in the message
  struct Sequence {               // a kind 1 section
    std::string_view identifier;  // "documents", "updates", "deletes", ...
    std::vector<std::string_view> documents;
  };
  std::vector<Sequence> sequences;
};
// Every section well-formed, exactly one body; the checksum (when flagged) is skipped,
// not verified.
std::optional<OpMsg> ParseOpMsg(std::string_view message);
// An OP_MSG of `body` and the given document sequences, without a checksum.
std::string BuildOpMsg(
    std::int32_t request_id, std::int32_t response_to, std::uint32_t flags, std::string_view body,
    const std::vector<std::pair<std::string, std::vector<std::string>>>& sequences = {});

struct OpQuery {
  std::string_view full_collection_name;  // "db.$cmd" for a command
  std::string_view query;                 // the first document
};
std::optional<OpQuery> ParseOpQuery(std::string_view message);

struct OpReply {
  std::int32_t number_returned = 0;
  std::string_view first_document;  // empty when it returned none
  std::size_t first_document_offset = 0;
};
std::optional<OpReply> ParseOpReply(std::string_view message);

// The command document of a message: an OP_MSG's body, an OP_QUERY's query or an
// OP_REPLY's first document; empty for any other opcode or a malformed message. Where
// it starts in the message goes to *offset when given.
std::string_view CommandDocument(std::string_view message, std::size_t* offset = nullptr);
// `message` with its command document (CommandDocument's) replaced by `document` and its
// length fixed; an OP_MSG checksum would no longer match, so it goes, and its flag with it.
// nullopt when the message has no command document.
std::optional<std::string> ReplaceCommandDocument(std::string_view message,
                                                  std::string_view document);

}  // namespace txn_recovery::testing
