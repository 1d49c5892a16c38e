#include "wire_counter.h"

#include <optional>
#include <stdexcept>
#include <utility>

#include "support/wire/bson.h"
#include "support/wire/message.h"

namespace txn_recovery::bench {

std::int64_t WireCounter::Statements(const std::string& message, std::string* collection) {
  std::optional<testing::OpMsg> msg = testing::ParseOpMsg(message);
  return msg ? Statements(*msg, collection) : 0;
}

std::string WireCounter::Target(const std::string& message) {
  std::optional<testing::OpMsg> msg = testing::ParseOpMsg(message);
  return msg ? Target(*msg) : "?";
}

std::string WireCounter::Target(const testing::OpMsg& msg) {
  auto first = testing::ReadElements(msg.body);
  if (!first || first->empty()) return "?";
  std::string target(first->front().key);
  if (auto name = testing::StringField(msg.body, target == "getMore" ? "collection" : target))
    target += " " + *name;
  return target;
}

std::int64_t WireCounter::Statements(const testing::OpMsg& msg, std::string* collection) {
  auto elements = testing::ReadElements(msg.body);
  if (!elements || elements->empty()) return 0;
  const testing::BsonElement& command = elements->front();
  if (command.key != "update" && command.key != "findAndModify") return 0;
  if (auto name = testing::StringField(msg.body, command.key)) *collection = *name;
  if (command.key == "findAndModify") return 1;
  std::int64_t n = 0;
  for (const auto& seq : msg.sequences)
    if (seq.identifier == "updates") n += static_cast<std::int64_t>(seq.documents.size());
  for (const auto& e : *elements)
    if (e.key == "updates" && e.type == testing::kBsonArray)
      if (auto items = testing::ReadElements(e.value))
        n += static_cast<std::int64_t>(items->size());
  return n;
}

WireCounter::WireCounter(const std::string& server_uri) {
  std::optional<testing::MongoUriParts> parts = testing::SplitMongoUri(server_uri);
  if (!parts) throw std::runtime_error("wire counter: needs a mongodb:// URI");
  testing::WireForwarder::Hooks hooks;
  hooks.on_request = [this](std::string_view request) { return Noted(request); };
  hooks.on_reply = [this](std::string* reply, std::any* note) {
    Answered(*reply, note);
    return testing::WireForwarder::ReplyVerdict{};
  };
  std::string error;
  forwarder_ = testing::WireForwarder::Start(parts->host, parts->port, std::move(hooks), &error);
  if (!forwarder_) throw std::runtime_error("wire counter: " + error);
  uri_ = testing::ForwardedUri(*parts, forwarder_->port());
}

WireCounter::~WireCounter() = default;

std::map<std::string, WireCounter::Counts> WireCounter::Take() {
  std::lock_guard lock(mu_);
  return std::exchange(counts_, {});
}

std::map<std::string, WireCounter::Timing> WireCounter::TakeTimings() {
  std::lock_guard lock(mu_);
  return std::exchange(timings_, {});
}

std::map<std::string, WireCounter::Timing> WireCounter::TakeTimingsByCollection() {
  std::lock_guard lock(mu_);
  return std::exchange(by_collection_, {});
}

std::any WireCounter::Noted(std::string_view request) {
  auto msg = testing::ParseOpMsg(request);
  if (!msg) return {};
  auto first = testing::ReadElements(msg->body);
  Request r;
  r.command = first && !first->empty() ? first->front().key : "?";
  r.statements = Statements(*msg, &r.collection);
  r.target = Target(*msg);
  r.sent = std::chrono::steady_clock::now();
  if (r.statements > 0) {
    std::lock_guard lock(mu_);
    Counts& k = counts_[r.collection];
    ++k.commands;
    k.statements += r.statements;
  }
  return r;
}

void WireCounter::Answered(std::string_view reply, std::any* note) {
  auto msg = testing::ParseOpMsg(reply);
  const auto* request = std::any_cast<Request>(note);
  if (!msg || !request) return;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - request->sent).count();
  std::int64_t matched = 0;
  if (request->command == "update") {
    matched = testing::IntegerField(msg->body, "n").value_or(0);
  } else if (auto last = testing::FindElement(msg->body, "lastErrorObject");
             request->command == "findAndModify" && last && last->type == testing::kBsonDocument) {
    matched = testing::IntegerField(last->value, "n").value_or(0);
  }
  {
    std::lock_guard lock(mu_);
    if (request->statements > 0) counts_[request->collection].matched += matched;
    for (Timing* t : {&timings_[request->command], &by_collection_[request->target]}) {
      ++t->count;
      t->seconds += seconds;
    }
  }
  // Only the first reply is the command's: later ones of a stream (moreToCome) are not
  // counted or timed again.
  note->reset();
}

}  // namespace txn_recovery::bench
