// A Prometheus text exposition (format 0.0.4), as the tests and the benchmark read what a
// daemon serves on /metrics or writes for the textfile collector: one reader of it.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace txn_recovery {

struct ExpositionSample {
  std::string series;  // NAME or NAME{LABELS}, as written
  std::string family;  // NAME
  double value = 0;
};

// Every sample line of `text`, in order; comments, blank lines and lines whose value does
// not read as a number are skipped.
std::vector<ExpositionSample> ParseExposition(const std::string& text);

// The value of the series spelled `series` (NAME or NAME{LABELS}, exactly as the exposition
// writes it), or -1 if there is none.
double SeriesValue(const std::string& text, const std::string& series);

// The sum of the labelled series of `family` whose labels contain `label_text` (e.g.
// watch="bank").
double FamilySum(const std::string& text, const std::string& family, const std::string& label_text);

// Each family summed over all its series.
std::map<std::string, double> FamilySums(const std::string& text);

}  // namespace txn_recovery
