// The bench's output (bench.h: Output): Markdown tables printed row by row as the figures
// come, and the --json report.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "bench.h"

namespace txn_recovery::bench {

std::string Fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}
std::string Int(std::int64_t v) {
  return std::to_string(v);
}
std::string Opt(const std::optional<double>& v, const char* f) {
  return v ? Fmt(f, *v) : "-";
}
std::string MiB(long kb) {
  return kb >= 0 ? Fmt("%.1f", static_cast<double>(kb) / 1024) : "-";
}
std::string Per(double v, std::int64_t n, const char* f) {
  return n > 0 ? Fmt(f, v / static_cast<double>(n)) : "-";
}

void Table::Print(const std::vector<std::string>& cells) {
  if (!printed_) {
    std::printf("\n%s\n\n", title_.c_str());
    for (std::size_t i = 0; i < headers_.size(); ++i)
      widths_.push_back(std::max<std::size_t>(headers_[i].size(), i == 0 ? 8 : 9));
    Line(headers_);
    std::string rule = "|";  // numbers right-aligned (":"), the first and last column not
    for (std::size_t i = 0; i < widths_.size(); ++i)
      rule += i == 0                    ? std::string(widths_[i] + 2, '-') + "|"
              : i + 1 == widths_.size() ? std::string("---|")
                                        : std::string(widths_[i] + 1, '-') + ":|";
    std::printf("%s", rule.c_str());
    std::printf("\n");
    printed_ = true;
  }
  Line(cells);
  std::fflush(stdout);
}

void Table::Line(const std::vector<std::string>& cells) {
  std::printf("|");
  for (std::size_t i = 0; i < cells.size() && i < widths_.size(); ++i) {
    const int w = static_cast<int>(widths_[i]);
    if (i + 1 == widths_.size())
      std::printf(" %s |", cells[i].c_str());
    else if (i == 0)
      std::printf(" %-*s |", w, cells[i].c_str());
    else
      std::printf(" %*s |", w, cells[i].c_str());
  }
  std::printf("\n");
}

void JsonReport::Save() const {
  if (path_.empty()) return;
  std::ofstream(path_) << doc_.dump(2) << "\n";
}

nlohmann::json Json(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json();
}

nlohmann::json Json(const RunResult& r) {
  nlohmann::json j = {{"done", r.done},
                      {"seconds", r.seconds},
                      {"complete", r.complete},
                      {"round_trips", r.round_trips},
                      {"documents_read", r.documents_read},
                      {"client_cpu_seconds", r.client_cpu},
                      {"server_cpu_seconds", Json(r.server_cpu)}};
  if (r.peak_rss_kb >= 0) j["peak_rss_kb"] = r.peak_rss_kb;
  return j;
}

nlohmann::json Json(const Writes& w) {
  nlohmann::json j = {
      {"update_commands", w.commands}, {"statements", w.statements()}, {"matched", w.matched()}};
  for (const auto& [k, v] : w.by)
    j["by_collection"][k] = {{"statements", v.statements}, {"matched", v.matched}};
  return j;
}

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

// "; 1 sweep failed (...) and the next went on", recorded in `row` too; empty if none did.
std::string Failures(const RunResult& r, nlohmann::json* row) {
  std::string text;
  if (r.failed_sweeps) {
    (*row)["failed_sweeps"] = r.failed_sweeps;
    (*row)["failure"] = r.failure;
    text += "; " + std::to_string(r.failed_sweeps) + " sweep(s) failed (last: " + r.failure +
            ") and the next went on";
  }
  if (r.follow_ups) {
    (*row)["follow_up_sweeps"] = r.follow_ups;
    text += "; " + std::to_string(r.follow_ups) +
            " more sweep(s), 10 s apart, for what the failed ones left leased";
  }
  return text;
}

}  // namespace txn_recovery::bench
