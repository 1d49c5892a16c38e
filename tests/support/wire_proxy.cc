#include "support/wire_proxy.h"

#include <utility>

#include "support/wire/little_endian.h"
#include "support/wire/message.h"

namespace txn_recovery::testing {

std::unique_ptr<WireProxy> WireProxy::Start(const std::string& host, int port, std::string* error) {
  std::unique_ptr<WireProxy> p(new WireProxy());
  WireForwarder::Hooks hooks;
  hooks.on_request = &WireProxy::Note;
  hooks.on_reply = [raw = p.get()](std::string* message, std::any* note) {
    return raw->Answer(message, note);
  };
  p->forwarder_ = WireForwarder::Start(host, port, std::move(hooks), error);
  if (!p->forwarder_) {
    *error = "wire proxy: " + *error;
    return nullptr;
  }
  return p;
}

std::unique_ptr<WireProxy> WireProxy::StartFor(const std::string& server_uri, std::string* error) {
  auto parts = SplitMongoUri(server_uri);
  if (!parts) {
    *error = "wire proxy: needs a mongodb:// URI of a server speaking plain TCP";
    return nullptr;
  }
  return Start(parts->host, parts->port, error);
}

std::string WireProxy::Uri(const std::string& server_uri) const {
  return ForwardedUri(SplitMongoUri(server_uri).value_or(MongoUriParts{}), port());
}

void WireProxy::SetRule(Rule rule) {
  std::lock_guard lock(rule_mu_);
  rule_ = std::move(rule);
}

std::any WireProxy::Note(std::string_view request) {
  Request r;
  std::string body(CommandDocument(request));
  if (auto h = ReadHeader(request); h && h->op_code == kOpMsg) {
    if (!body.empty()) r.database = StringField(body, "$db").value_or("");
  } else if (auto q = ParseOpQuery(request)) {
    std::string_view ns = q->full_collection_name;
    r.database = std::string(ns.substr(0, ns.find('.')));
    // {$query: {...}, $readPreference: ...}: the command is inside.
    if (auto inner = FindElement(body, "$query"); inner && inner->type == kBsonDocument)
      body = inner->value;
  }
  if (auto elements = body.empty() ? std::nullopt : ReadElements(body);
      elements && !elements->empty()) {
    r.command = elements->front().key;
    if (elements->front().type == kBsonString && elements->front().value.size() >= 5)
      r.collection = elements->front().value.substr(4, elements->front().value.size() - 5);
  }
  return r;
}

WireForwarder::ReplyVerdict WireProxy::Answer(std::string* message, std::any* note) {
  using Then = WireForwarder::ReplyVerdict::Then;
  Reply reply;
  reply.body = std::string(CommandDocument(*message));
  if (reply.body.empty()) return {};  // nothing a rule could read: passes untouched
  if (const auto* r = std::any_cast<Request>(note)) {
    reply.command = r->command;
    reply.database = r->database;
    reply.collection = r->collection;
  }
  const std::string original = reply.body;
  Verdict verdict;
  {
    std::lock_guard lock(rule_mu_);
    if (rule_) verdict = rule_(&reply);
  }
  if (verdict.fate != Fate::kForward || reply.body != original) forged_++;
  if (reply.body != original) *message = *ReplaceCommandDocument(*message, reply.body);

  WireForwarder::ReplyVerdict out;
  switch (verdict.fate) {
    case Fate::kForward:
      break;
    case Fate::kDelay:
      out.delay = verdict.delay;
      break;
    case Fate::kTruncateAndClose:
      message->resize(message->size() / 2);
      out.then = Then::kClose;
      break;
    case Fate::kTruncateAndStall:
      // Nothing more until the client gives up (its socket timeout) or the proxy stops.
      message->resize(message->size() / 2);
      out.then = Then::kStallReplies;
      break;
    case Fate::kOversized: {
      std::string length;
      PutInt32(&length, static_cast<std::int32_t>(kMaxMessageSize));
      message->replace(0, 4, length);
      out.then = Then::kClose;
      break;
    }
    case Fate::kClose:
      message->clear();
      out.then = Then::kClose;
      break;
  }
  return out;
}

}  // namespace txn_recovery::testing
