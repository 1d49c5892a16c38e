#include "daemon/base/suggest.h"

#include <algorithm>

namespace txn_recovery::daemon {

std::size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

std::string Closest(std::string_view name, const std::vector<std::string>& candidates) {
  std::string closest;
  std::size_t best = std::min<std::size_t>(4, (name.size() + 1) / 2);  // near misses only
  for (const auto& c : candidates) {
    if (c == name) return "";
    if (std::size_t d = EditDistance(name, c); d < best) {
      best = d;
      closest = c;
    }
  }
  return closest;
}

}  // namespace txn_recovery::daemon
