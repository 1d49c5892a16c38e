#include "malformed_txns.h"

#include <limits>

namespace txn_recovery::testing {

Value UninterpretedValue(const char* type_name, std::uint8_t type, const std::string& bytes) {
  std::string doc(4, '\0');
  doc += static_cast<char>(type);
  doc += '\0';  // the empty key
  doc += bytes;
  doc += '\0';  // the document's end
  const auto n = static_cast<std::uint32_t>(doc.size());
  for (int i = 0; i < 4; ++i) doc[static_cast<std::size_t>(i)] = static_cast<char>(n >> (8 * i));
  return Value(OtherValue{type_name, doc});
}

std::vector<MalformedTxn> MalformedTransfers(const Profile& profile, const Value& from,
                                             const Value& to, std::int64_t first_id,
                                             DateTime time) {
  const TransferProfile& tp = *profile.transfer();
  const std::string& state = profile.state_field;
  const std::string& when = profile.time_field;
  std::int64_t next_id = first_id;
  // A well-formed pending transfer of 10, to be broken by each case.
  auto base = [&] {
    Document d{{"_id", next_id++}};
    d.SetPath(tp.source_field, from);
    d.SetPath(tp.destination_field, to);
    d.SetPath(tp.amount_field, std::int32_t{10});
    d.SetPath(state, profile.states.Written(TxnState::kPending));
    d.SetPath(when, time);
    return d;
  };
  auto nested = [](int depth) {
    Value v = std::int32_t{1};
    for (int i = 0; i < depth; ++i) v = Document{{"a", v}};
    return v;
  };
  std::vector<MalformedTxn> out;
  auto add = [&](std::string name, Document d, std::string reason,
                 MalformedTxn::Expect expect = MalformedTxn::Expect::kQuarantine) {
    out.push_back({std::move(name), std::move(d), expect, std::move(reason)});
  };
  auto without = [&](const std::string& field) {
    Document d = base();
    Document trimmed;
    for (const auto& [k, v] : d)
      if (k != field) trimmed.Set(k, v);
    return trimmed;
  };
  auto with = [&](const std::string& field, Value v) {
    Document d = base();
    d.SetPath(field, std::move(v));
    return d;
  };

  add("state missing", without(state), "'" + state + "' is missing");
  add("state a number", with(state, std::int32_t{2}), "'" + state + "' has type");
  add("state unknown (the schema book's typo)", with(state, "intital"), "unknown state");
  add("state in another case", with(state, "Pending"), "unknown state");
  add("state nested deeply", with(state, nested(60)), "'" + state + "' has type");
  add("time missing", without(when), "'" + when + "' is missing");
  add("time a string", with(when, "2024-01-01T00:00:00Z"), "'" + when + "' has type");
  add("time epoch milliseconds", with(when, std::int64_t{1700000000000}),
      "'" + when + "' has type");
  add("time an ObjectId-like string", with(when, "65a1b2c3d4e5f60718293a4b"),
      "'" + when + "' has type");
  add(
      "_id a document",
      [&] {
        Document d = base();
        d.Set("_id", Document{{"n", next_id++}});
        return d;
      }(),
      "'_id' has type");
  add(
      "_id a boolean (the only one)",
      [&] {
        Document d = base();
        d.Set("_id", true);
        return d;
      }(),
      "'_id' has type");
  add("source missing", without(tp.source_field), "'" + tp.source_field + "' is missing");
  add("destination missing", without(tp.destination_field),
      "'" + tp.destination_field + "' is missing");
  add("amount missing", without(tp.amount_field), "'" + tp.amount_field + "' is missing");
  // Issue 11's shapes. An _id of a type the model does not interpret is kept byte for
  // byte, so that the quarantine write can find the document again.
  add(
      "_id a minKey",
      [&] {
        Document d = base();
        d.Set("_id", UninterpretedValue("minKey", 0xFF, ""));
        return d;
      }(),
      "'_id' has type minKey");
  add(
      "_id a decimal128",
      [&] {
        Document d = base();
        // 1.5: a server compares decimal128 with the other numbers, so an integral one
        // could collide with an integer _id of the same collection.
        d.Set("_id", UninterpretedValue("decimal128", 0x13,
                                        std::string("\x0f\0\0\0\0\0\0\0\0\0\0\0\0\0\x3e\x30", 16)));
        return d;
      }(),
      "'_id' has type decimal128");
  add("time at the start of time (INT64_MIN ms): very old, not negative",
      with(when, DateTime{std::numeric_limits<std::int64_t>::min()}), "",
      MalformedTxn::Expect::kCancel);
  // Old enough to be rolled back, and nothing applied: no write ever carries the amount,
  // so cancelling loses nothing (a resume quarantines them: engine_test's InexactAmount).
  add("amount 1e20, a double beyond its exact integers", with(tp.amount_field, 1e20), "",
      MalformedTxn::Expect::kCancel);
  add("amount INT64_MAX, which would overflow the credited balance",
      with(tp.amount_field, std::numeric_limits<std::int64_t>::max()), "",
      MalformedTxn::Expect::kCancel);
  add("daemon sub-document's lease with an owner number and an expiry string",
      with("recovery.lease", Document{{"owner", std::int32_t{5}}, {"expires", "x"}}),
      "recovery.lease.owner");
  add("source a boolean", with(tp.source_field, true), "'" + tp.source_field + "' has type");
  add("destination null", with(tp.destination_field, Null{}),
      "'" + tp.destination_field + "' has type");
  add("amount a string", with(tp.amount_field, "100"), "'" + tp.amount_field + "' has type");
  add("amount negative", with(tp.amount_field, std::int32_t{-100}), "positive finite");
  add("amount zero", with(tp.amount_field, 0.0), "positive finite");
  add("amount NaN", with(tp.amount_field, std::numeric_limits<double>::quiet_NaN()),
      "positive finite");
  add("amount infinite", with(tp.amount_field, std::numeric_limits<double>::infinity()),
      "positive finite");
  add("amount INT32_MIN (no exact negation)",
      with(tp.amount_field, std::numeric_limits<std::int32_t>::min()), "positive finite");
  add("amount a document", with(tp.amount_field, Document{{"$numberDecimal", "10"}}),
      "'" + tp.amount_field + "' has type");
  add("self-transfer", with(tp.destination_field, from), "same participant");
  {
    Array huge;
    huge.reserve(100000);
    for (std::int32_t i = 0; i < 100000; ++i) huge.emplace_back(i);
    add("source a 100000-element array", with(tp.source_field, std::move(huge)),
        "'" + tp.source_field + "' has type");
  }
  add("destination nested 90 deep", with(tp.destination_field, nested(90)),
      "'" + tp.destination_field + "' has type");
  add("daemon sub-document's lease a string", with("recovery.lease", "mine"),
      "'recovery.lease' has type");
  add("daemon sub-document a string", with("recovery", "garbage"), "'recovery' has type");
  // Well-formed, but naming participants that do not exist: docs/state-machine.md's "an operation
  // that can never apply" -- rolled back, touching nothing.
  add("source does not exist", with(tp.source_field, "nobody"), "", MalformedTxn::Expect::kCancel);
  add("destination the empty string", with(tp.destination_field, ""), "",
      MalformedTxn::Expect::kCancel);
  return out;
}

}  // namespace txn_recovery::testing
