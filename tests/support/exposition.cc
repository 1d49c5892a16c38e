#include "support/exposition.h"

#include <cstdlib>
#include <sstream>

namespace txn_recovery {

std::vector<ExpositionSample> ParseExposition(const std::string& text) {
  std::vector<ExpositionSample> samples;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const std::size_t name_end = line.find_first_of("{ ");
    const std::size_t value_at = line.rfind(' ');
    if (name_end == std::string::npos || value_at == std::string::npos) continue;
    const char* value = line.c_str() + value_at + 1;
    char* end = nullptr;
    const double v = std::strtod(value, &end);
    if (end == value) continue;
    samples.push_back({line.substr(0, value_at), line.substr(0, name_end), v});
  }
  return samples;
}

double SeriesValue(const std::string& text, const std::string& series) {
  for (const ExpositionSample& s : ParseExposition(text))
    if (s.series == series) return s.value;
  return -1;
}

double FamilySum(const std::string& text, const std::string& family,
                 const std::string& label_text) {
  double sum = 0;
  for (const ExpositionSample& s : ParseExposition(text))
    if (s.family == family && s.series.size() > family.size() &&
        s.series.find(label_text, family.size()) != std::string::npos)
      sum += s.value;
  return sum;
}

std::map<std::string, double> FamilySums(const std::string& text) {
  std::map<std::string, double> sums;
  for (const ExpositionSample& s : ParseExposition(text)) sums[s.family] += s.value;
  return sums;
}

}  // namespace txn_recovery
