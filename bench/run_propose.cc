// The first hour's commands, timed as an operator runs them (issue 43's acceptance):
// `txn-recoveryd propose --database DB` over a database whose transactions collection holds
// N finished transactions (SeedTerminal: done and cancelled, past every threshold, and the
// accounts they moved), and `txn-recoveryd rehearse --watch NAME --json` of the profile's
// watch on that database (its scratch collections beside the N). Each a separate process:
// wall time, its CPU and own peak RSS (child_process.h), the server's CPU. Seeding is done
// before any clock starts. What each printed is checked, never its time: the proposal must
// name the profile for the transactions collection, the rehearsal must pass.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench.h"
#include "wire_counter.h"

namespace txn_recovery::bench {

namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// One child `txn-recoveryd ARGS`, the URI in its environment; its output kept in `out`.
RunResult Timed(const Options& o, const std::string& uri, const ProcessTreeCpu& server,
                const std::vector<std::string>& args, std::string* out) {
  setenv("TXN_RECOVERYD_MONGODB_URI", uri.c_str(), 1);
  const std::string out_path = TempPath("-first-hour.out");
  ServerMeter meter(server);
  ChildRun c = RunChild(o.daemon, args, out_path);
  RunResult r;
  r.server_cpu = meter.Elapsed();
  *out = ReadAll(out_path);
  std::remove(out_path.c_str());
  r.seconds = c.seconds;
  r.client_cpu = c.cpu_seconds;
  r.peak_rss_kb = c.peak_rss_kb;
  r.exit_code = c.term_signal ? 128 + c.term_signal : c.exit_code;
  return r;
}

// What is wrong with a proposal for `db`'s transactions collection under `profile`, or "".
std::string ProposalProblem(const std::string& text, const std::string& db,
                            const std::string& profile) {
  const std::string head = "# " + db + ".transactions";
  const auto at = text.find(head);
  if (at == std::string::npos) return "no line for " + db + ".transactions";
  const std::string line = text.substr(at, text.find('\n', at) - at);
  if (line.find("profile " + profile) == std::string::npos)
    return "not proposed as " + profile + ": " + line;
  if (text.find("profile = \"" + profile + "\"") == std::string::npos)
    return "no [[watch]] with profile = \"" + profile + "\"";
  return "";
}

std::string Range(const std::vector<RunResult>& runs) {
  std::string s;
  for (const auto& r : runs) s += (s.empty() ? "" : " / ") + Fmt("%.2f", r.seconds);
  return s;
}

}  // namespace

void Session::RunFirstHour() {
  if (o.propose.empty()) return;
  Table table(
      "The first hour: propose over N finished transactions, rehearse of one watch",
      {"command", "N finished", "wall s", "CPU s", "server CPU s", "peak RSS MiB", "exit", "note"});
  for (std::int64_t n : o.propose) {
    seed(n, true);
    for (const auto& p : profiles) {
      const std::string db = db_of(*p);
      // The collection holds what the row says, all of it finished, before any clock starts.
      std::int64_t held = 0, unfinished = 0;
      Check(store->Count(p->Transactions(db), Filter(), &held), "count transactions");
      Check(store->Count(p->Transactions(db), p->Unfinished(), &unfinished), "count unfinished");
      if (held != n / share || unfinished != 0)
        throw std::runtime_error(db + " holds " + Int(held) + " transactions, " + Int(unfinished) +
                                 " unfinished; seeded " + Int(n / share) + " finished");
      // The floor under propose: the one $sample of the transactions it cannot do without,
      // sent alone by this process through the same driver, three times (the median shown).
      {
        const std::int64_t size = o.propose_sample > 0 ? o.propose_sample : 1000;
        std::vector<RunResult> samples;
        for (int i = 0; i < 3; ++i) {
          std::vector<Document> docs;
          ServerMeter meter(server);
          const auto t0 = Steady::now();
          Check(store->Sample(p->Transactions(db), size, &docs), "$sample");
          RunResult r;
          r.seconds = Seconds(Steady::now() - t0).count();
          r.server_cpu = meter.Elapsed();
          r.documents_read = static_cast<std::int64_t>(docs.size());
          samples.push_back(r);
        }
        std::vector<RunResult> sorted = samples;
        std::sort(sorted.begin(), sorted.end(),
                  [](const RunResult& a, const RunResult& b) { return a.seconds < b.seconds; });
        const RunResult& m = sorted[1];
        table.Print({"$sample alone", Int(n / share), Fmt("%.2f", m.seconds), "-",
                     Opt(m.server_cpu), "-", "-",
                     p->name() + "; " + Int(size) + " of the transactions, median of 3 (" +
                         Range(samples) + " s), " + Int(m.documents_read) + " returned"});
        nlohmann::json j = Json(m);
        j["run"] = "sample";
        j["profile"] = p->name();
        j["n"] = n / share;
        j["runs"] = nlohmann::json::array();
        for (const auto& r : samples) j["runs"].push_back(Json(r));
        report.Add(std::move(j));
      }
      std::vector<std::string> args = {"propose", "--database", db};
      if (o.propose_sample > 0) args.insert(args.end(), {"--sample", Int(o.propose_sample)});
      // The first run on a fresh server (the embedded one compiles its paths) is shown
      // apart: the runs after it are what an operator who runs it again sees.
      std::vector<RunResult> runs;
      std::string problems;
      for (int i = 0; i < 1 + std::max(1, o.propose_runs); ++i) {
        std::printf("load average before propose: %s\n", LoadAverage().c_str());
        std::string out;
        RunResult r = Timed(o, uri, server, args, &out);
        std::printf("load average after propose: %s\n", LoadAverage().c_str());
        if (std::string problem = ProposalProblem(out, db, p->name()); !problem.empty())
          problems += (problems.empty() ? "" : "; ") + problem;
        runs.push_back(r);
        if (i == 0 && !o.propose_out.empty()) std::ofstream(o.propose_out) << out;
      }
      const RunResult first = runs.front();
      runs.erase(runs.begin());
      std::vector<RunResult> sorted = runs;
      std::sort(sorted.begin(), sorted.end(),
                [](const RunResult& a, const RunResult& b) { return a.seconds < b.seconds; });
      const RunResult& m = sorted[sorted.size() / 2];
      std::string note = p->name() + "; median of " + std::to_string(runs.size()) + " (" +
                         Range(runs) + " s); first run " + Fmt("%.2f", first.seconds) + " s";
      note += problems.empty() ? "; proposal names the profile" : "; WRONG: " + problems;
      // Where its time goes: one more run, every command timed on the wire by the collection
      // it names, the costliest first.
      std::vector<std::pair<std::string, WireCounter::Timing>> commands;
      {
        WireCounter timer(uri);
        std::string out;
        (void)Timed(o, timer.Uri(), server, args, &out);
        for (const auto& entry : timer.TakeTimingsByCollection()) commands.push_back(entry);
      }
      std::sort(commands.begin(), commands.end(),
                [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
      note += "; on the wire:";
      for (std::size_t i = 0; i < commands.size() && i < 4; ++i)
        note += (i ? ", " : " ") + commands[i].first + " x" +
                std::to_string(commands[i].second.count) + " " +
                Fmt("%.2f", commands[i].second.seconds) + " s";
      table.Print({"propose", Int(n / share), Fmt("%.2f", m.seconds), Fmt("%.2f", m.client_cpu),
                   Opt(m.server_cpu), MiB(m.peak_rss_kb), Int(m.exit_code), note});
      nlohmann::json j = Json(m);
      j["run"] = "propose";
      j["profile"] = p->name();
      j["n"] = n / share;
      j["exit_code"] = m.exit_code;
      j["first"] = Json(first);
      j["runs"] = nlohmann::json::array();
      for (const auto& r : runs) j["runs"].push_back(Json(r));
      j["correct"] = problems.empty();
      j["commands_on_the_wire"] = nlohmann::json::object();
      for (const auto& [name, t] : commands)
        j["commands_on_the_wire"][name] = {{"count", t.count}, {"seconds", t.seconds}};
      if (!problems.empty()) j["problem"] = problems;
      report.Add(std::move(j));

      // The rehearsal of this profile's watch, its scratch collections beside the N.
      std::vector<RunResult> rehearsals;
      std::string failures;
      std::size_t scenarios = 0;
      for (int i = 0; i < std::max(0, o.rehearse_runs); ++i) {
        std::printf("load average before rehearse: %s\n", LoadAverage().c_str());
        std::string out;
        RunResult r =
            Timed(o, uri, server, {"rehearse", "--config", config, "--watch", db, "--json"}, &out);
        std::printf("load average after rehearse: %s\n", LoadAverage().c_str());
        try {
          nlohmann::json doc = nlohmann::json::parse(out);
          for (const auto& w : doc["watches"]) {
            scenarios = w["scenarios"].size();
            if (!w["passed"].get<bool>())
              failures += (failures.empty() ? "" : "; ") + std::string("did not pass: ") +
                          w["error"].get<std::string>();
          }
        } catch (const nlohmann::json::exception& e) {
          failures += (failures.empty() ? "" : "; ") + std::string("no report: ") + e.what();
        }
        if (r.exit_code != 0) failures += "; exit " + Int(r.exit_code);
        rehearsals.push_back(r);
      }
      if (rehearsals.empty()) continue;
      std::vector<RunResult> rs = rehearsals;
      std::sort(rs.begin(), rs.end(),
                [](const RunResult& a, const RunResult& b) { return a.seconds < b.seconds; });
      const RunResult& rm = rs[rs.size() / 2];
      std::string rnote = p->name() + "; median of " + std::to_string(rehearsals.size()) + " (" +
                          Range(rehearsals) + " s); " + std::to_string(scenarios) + " scenarios";
      rnote += failures.empty() ? ", every one passed" : "; FAILED: " + failures;
      table.Print({"rehearse", Int(n / share), Fmt("%.2f", rm.seconds), Fmt("%.2f", rm.client_cpu),
                   Opt(rm.server_cpu), MiB(rm.peak_rss_kb), Int(rm.exit_code), rnote});
      nlohmann::json rj = Json(rm);
      rj["run"] = "rehearse";
      rj["profile"] = p->name();
      rj["n"] = n / share;
      rj["scenarios"] = scenarios;
      rj["passed"] = failures.empty();
      rj["runs"] = nlohmann::json::array();
      for (const auto& r : rehearsals) rj["runs"].push_back(Json(r));
      if (!failures.empty()) rj["problem"] = failures;
      report.Add(std::move(rj));
    }
  }
}

}  // namespace txn_recovery::bench
