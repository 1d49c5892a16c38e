#include "support/wire/message.h"

#include "support/wire/little_endian.h"

namespace txn_recovery::testing {
namespace {

// The length of the BSON document at `at` if it fits before `end`, or 0.
std::size_t DocumentSize(std::string_view m, std::size_t at, std::size_t end) {
  if (at + 4 > end) return 0;
  std::int32_t n = GetInt32(m, at);
  if (n < 5 || static_cast<std::size_t>(n) > end - at) return 0;
  return static_cast<std::size_t>(n);
}

bool HeaderSays(std::string_view m, std::int32_t op_code) {
  auto h = ReadHeader(m);
  return h && h->op_code == op_code && h->length == static_cast<std::int32_t>(m.size());
}

}  // namespace

std::optional<MessageHeader> ReadHeader(std::string_view bytes) {
  if (bytes.size() < kMessageHeaderSize) return std::nullopt;
  return MessageHeader{GetInt32(bytes, 0), GetInt32(bytes, 4), GetInt32(bytes, 8),
                       GetInt32(bytes, 12)};
}

std::optional<OpMsg> ParseOpMsg(std::string_view m) {
  if (!HeaderSays(m, kOpMsg) || m.size() < kMessageHeaderSize + 5) return std::nullopt;
  OpMsg msg;
  msg.flags = static_cast<std::uint32_t>(GetInt32(m, 16));
  const std::size_t end = m.size() - ((msg.flags & kChecksumPresent) ? 4 : 0);
  bool has_body = false;
  for (std::size_t pos = 20; pos < end;) {
    const char kind = m[pos++];
    if (kind == 0) {
      const std::size_t size = DocumentSize(m, pos, end);
      if (size == 0 || has_body) return std::nullopt;
      has_body = true;
      msg.body = m.substr(pos, size);
      msg.body_offset = pos;
      pos += size;
    } else if (kind == 1) {
      if (pos + 4 > end) return std::nullopt;
      const std::int32_t size = GetInt32(m, pos);
      if (size < 5 || static_cast<std::size_t>(size) > end - pos) return std::nullopt;
      const std::size_t section_end = pos + static_cast<std::size_t>(size);
      const std::size_t name_end = m.find('\0', pos + 4);
      if (name_end == std::string_view::npos || name_end >= section_end) return std::nullopt;
      OpMsg::Sequence seq;
      seq.identifier = m.substr(pos + 4, name_end - pos - 4);
      for (std::size_t p = name_end + 1; p < section_end;) {
        const std::size_t n = DocumentSize(m, p, section_end);
        if (n == 0) return std::nullopt;
        seq.documents.push_back(m.substr(p, n));
        p += n;
      }
      msg.sequences.push_back(std::move(seq));
      pos = section_end;
    } else {
      return std::nullopt;
    }
  }
  if (!has_body) return std::nullopt;
  return msg;
}

std::string BuildOpMsg(
    std::int32_t request_id, std::int32_t response_to, std::uint32_t flags, std::string_view body,
    const std::vector<std::pair<std::string, std::vector<std::string>>>& sequences) {
  std::string sections;
  sections.push_back('\0');
  sections.append(body);
  for (const auto& [name, docs] : sequences) {
    std::string payload = name;
    payload.push_back('\0');
    for (const auto& d : docs) payload += d;
    sections.push_back('\1');
    PutInt32(&sections, static_cast<std::int32_t>(payload.size() + 4));
    sections += payload;
  }
  std::string m;
  PutInt32(&m, static_cast<std::int32_t>(kMessageHeaderSize + 4 + sections.size()));
  PutInt32(&m, request_id);
  PutInt32(&m, response_to);
  PutInt32(&m, kOpMsg);
  PutInt32(&m, static_cast<std::int32_t>(flags & ~kChecksumPresent));
  return m + sections;
}

std::optional<OpQuery> ParseOpQuery(std::string_view m) {
  // header, flags, fullCollectionName, numberToSkip, numberToReturn, query
  if (!HeaderSays(m, kOpQuery) || m.size() <= 20) return std::nullopt;
  const std::size_t name_end = m.find('\0', 20);
  if (name_end == std::string_view::npos) return std::nullopt;
  const std::size_t at = name_end + 1 + 8;
  const std::size_t size = DocumentSize(m, at, m.size());
  if (size == 0) return std::nullopt;
  return OpQuery{m.substr(20, name_end - 20), m.substr(at, size)};
}

std::optional<OpReply> ParseOpReply(std::string_view m) {
  // header, responseFlags, cursorID, startingFrom, numberReturned, documents
  if (!HeaderSays(m, kOpReply) || m.size() < 36) return std::nullopt;
  OpReply r;
  r.number_returned = GetInt32(m, 32);
  if (r.number_returned >= 1) {
    const std::size_t size = DocumentSize(m, 36, m.size());
    if (size == 0) return std::nullopt;
    r.first_document = m.substr(36, size);
    r.first_document_offset = 36;
  }
  return r;
}

std::string_view CommandDocument(std::string_view message, std::size_t* offset) {
  auto h = ReadHeader(message);
  if (!h) return {};
  std::string_view doc;
  std::size_t at = 0;
  if (h->op_code == kOpMsg) {
    if (auto m = ParseOpMsg(message)) {
      doc = m->body;
      at = m->body_offset;
    }
  } else if (h->op_code == kOpQuery) {
    if (auto q = ParseOpQuery(message)) {
      doc = q->query;
      at = static_cast<std::size_t>(q->query.data() - message.data());
    }
  } else if (h->op_code == kOpReply) {
    if (auto r = ParseOpReply(message)) {
      doc = r->first_document;
      at = r->first_document_offset;
    }
  }
  if (offset) *offset = at;
  return doc;
}

std::optional<std::string> ReplaceCommandDocument(std::string_view message,
                                                  std::string_view document) {
  std::size_t at = 0;
  std::string_view old = CommandDocument(message, &at);
  if (old.empty()) return std::nullopt;
  std::size_t end = message.size();
  std::string out(message.substr(0, at));
  if (GetInt32(message, 12) == kOpMsg) {
    auto flags = static_cast<std::uint32_t>(GetInt32(message, 16));
    if (flags & kChecksumPresent) end -= 4;
    std::string f;
    PutInt32(&f, static_cast<std::int32_t>(flags & ~kChecksumPresent));
    out.replace(16, 4, f);
  }
  out.append(document);
  out.append(message.substr(at + old.size(), end - at - old.size()));
  std::string length;
  PutInt32(&length, static_cast<std::int32_t>(out.size()));
  out.replace(0, 4, length);
  return out;
}

}  // namespace txn_recovery::testing
