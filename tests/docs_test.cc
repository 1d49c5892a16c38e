// Documentation drift: what the man page, the shell completions, the example configuration,
// docs/configuration.md and the container image say, checked against the code that defines
// it (the configuration's keys: the schema, daemon/configuration/config_schema.cc).
#include <gtest/gtest.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "daemon/cli.h"
#include "daemon/configuration/config.h"
#include "daemon/configuration/config_schema.h"

namespace txn_recovery::daemon {
namespace {

namespace fs = std::filesystem;

std::string Read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

fs::path Source(const std::string& relative) {
  return fs::path(TXN_RECOVERY_SOURCE_DIR) / relative;
}

// groff escapes '-' as "\-".
std::string Roff(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '-' ? std::string("\\-") : std::string(1, c);
  return out;
}

// The text of the man page section `.SH NAME` up to the next `.SH`.
std::string Section(const std::string& page, const std::string& name) {
  std::size_t start = page.find("\n.SH " + name + "\n");
  if (start == std::string::npos) return "";
  std::size_t end = page.find("\n.SH ", start + 1);
  return page.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

struct Command {
  std::string name;
  std::vector<std::string> long_options;  // "--dry-run"
};

std::vector<Command> Commands() {
  CliOptions o;
  std::unique_ptr<CLI::App> app = BuildCli(&o);
  std::vector<Command> out;
  for (const CLI::App* sub : app->get_subcommands([](const CLI::App*) { return true; })) {
    Command c{sub->get_name(), {}};
    for (const CLI::Option* opt : sub->get_options())
      for (const auto& l : opt->get_lnames()) c.long_options.push_back("--" + l);
    out.push_back(c);
  }
  return out;
}

TEST(ManPage, DescribesEveryCommandAndEveryOptionOfIt) {
  const std::string page = Read(Source("packaging/txn-recoveryd.8"));
  const std::string commands = Section(page, "COMMANDS");
  const std::string options = Section(page, "OPTIONS");
  const std::string synopsis = Section(page, "SYNOPSIS");
  ASSERT_FALSE(commands.empty());
  for (const auto& c : Commands()) {
    EXPECT_NE(commands.find("\n.B " + Roff(c.name) + "\n"), std::string::npos)
        << c.name << " has no entry under COMMANDS";
    EXPECT_NE(synopsis.find(Roff(c.name)), std::string::npos) << c.name << " not in SYNOPSIS";
    for (const auto& opt : c.long_options) {
      if (opt == "--help") continue;
      EXPECT_NE(options.find(Roff(opt)), std::string::npos)
          << c.name << " " << opt << " is not under OPTIONS";
      // Each option is listed under the commands that take it.
      std::size_t at = options.find(Roff(opt));
      std::size_t next = options.find("\n.TP", at);
      std::string entry = options.substr(at, next == std::string::npos ? next : next - at);
      if (opt != "--config") {
        EXPECT_NE(entry.find(Roff(c.name)), std::string::npos)
            << "the entry of " << opt << " does not name " << c.name << ":\n"
            << entry;
      }
    }
  }
}

TEST(ManPage, ListsEveryEnvironmentVariableTheConfigurationReads) {
  const std::string env = Section(Read(Source("packaging/txn-recoveryd.8")), "ENVIRONMENT");
  ASSERT_FALSE(env.empty());
  for (const auto& name : EnvironmentVariables())
    EXPECT_NE(env.find(name), std::string::npos) << name << " is not under ENVIRONMENT";
  // And nothing it names is unknown to the code.
  std::regex var("TXN_RECOVERYD_[A-Z_]+[A-Z]");
  for (std::sregex_iterator it(env.begin(), env.end(), var), end; it != end; ++it)
    if (it->str() != "TXN_RECOVERYD_SECTION_KEY") {
      EXPECT_TRUE(UnknownEnvironmentVariables({it->str()}).empty()) << it->str();
    }
}

TEST(Completions, OfferEveryCommandAndOption) {
  const std::string bash = Read(Source("packaging/completions/txn-recoveryd.bash"));
  const std::string zsh = Read(Source("packaging/completions/_txn-recoveryd"));
  ASSERT_FALSE(bash.empty());
  ASSERT_FALSE(zsh.empty());
  for (const auto& c : Commands()) {
    EXPECT_NE(bash.find(c.name), std::string::npos) << "bash: " << c.name;
    EXPECT_NE(zsh.find(c.name), std::string::npos) << "zsh: " << c.name;
    for (const auto& opt : c.long_options) {
      EXPECT_NE(bash.find(opt), std::string::npos) << "bash: " << c.name << " " << opt;
      EXPECT_NE(zsh.find(opt), std::string::npos) << "zsh: " << c.name << " " << opt;
    }
  }
}

// ---- The configuration's schema (daemon/configuration/config_schema.cc) against the code that
// applies it and the three documents that describe it: a key, a default or a bound that drifts in
// any of them fails here.

std::string Trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  std::size_t first = 0;
  while (first < s.size() && std::isspace(static_cast<unsigned char>(s[first]))) ++first;
  return s.substr(first);
}

// Two values as a file spells them are the same value: "1m" and "60s" are one duration.
bool SameValue(const std::string& a, const std::string& b) {
  if (a == b) return true;
  auto unquoted = [](const std::string& v) {
    return v.size() >= 2 && v.front() == '"' && v.back() == '"' ? v.substr(1, v.size() - 2) : "";
  };
  std::chrono::milliseconds x, y;
  return !unquoted(a).empty() && ParseDuration(unquoted(a), &x).ok() &&
         ParseDuration(unquoted(b), &y).ok() && x == y;
}

// The profiles `spec` belongs to; "" alone for a key outside [[watch]].
std::vector<std::string> ProfilesOf(const KeySpec& spec) {
  if (spec.profiles == 0) return {""};
  std::vector<std::string> out;
  for (auto name : kProfileNames)
    if (spec.profiles & ProfileBit(name)) out.emplace_back(name);
  return out;
}

// Another name of a state ([watch.states] new, committed, ...): its default is its state's.
bool IsStateAlias(const KeySpec& spec) {
  return !spec.state.empty() && spec.state != spec.key;
}

// A key's default as docs/configuration.md and the man page state it: rendered from the
// library's structs (and the daemon's Config), so that a document stating another default
// than the code applies fails here.
std::string DefaultCell(const KeySpec& spec) {
  if (!DefaultText(spec).empty()) return "`" + DefaultText(spec) + "`";
  return (spec.flags & kRequired) ? "required" : "—";
}

// The cells of every row of the Markdown tables of `doc`, by the key its first cell names.
std::map<std::string, std::vector<std::string>> TableRows(const std::string& doc) {
  std::map<std::string, std::vector<std::string>> rows;
  std::istringstream in(doc);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("| `", 0) != 0) continue;
    std::vector<std::string> cells;
    std::string cell;
    for (std::size_t i = 1; i < line.size(); ++i) {
      if (line[i] == '|' && line[i - 1] != '\\') {
        cells.push_back(Trim(cell));
        cell.clear();
      } else {
        cell += line[i];
      }
    }
    std::string key = cells.empty() ? "" : cells[0];
    key.erase(std::remove(key.begin(), key.end(), '`'), key.end());
    rows[key] = cells;
  }
  return rows;
}

TEST(ConfigurationReference, ListsEveryKeyWithTheSchemasTypeDefaultBoundsAndProfiles) {
  const std::string doc = Read(Source("docs/configuration.md"));
  const auto rows = TableRows(doc);
  ASSERT_FALSE(rows.empty()) << "docs/configuration.md has no key table";
  for (const KeySpec& k : ConfigSchema()) {
    const std::string name = FullName(k);
    if (k.section.empty()) {  // a section: the page's headings
      EXPECT_NE(doc.find(k.type == KeyType::kTable ? "[" + name + "]" : "[[" + name + "]]"),
                std::string::npos)
          << name;
      continue;
    }
    auto row = rows.find(name);
    if (row == rows.end()) {
      ADD_FAILURE() << name << " has no row in docs/configuration.md";
      continue;
    }
    const std::vector<std::string>& cells = row->second;
    ASSERT_EQ(cells.size(), 6u) << name << ": key | type | default | accepted | profiles | meaning";
    EXPECT_EQ(cells[1], TypeName(k.type)) << name;
    EXPECT_EQ(cells[2], DefaultCell(k)) << name;
    EXPECT_EQ(cells[3], BoundsText(k)) << name;
    EXPECT_EQ(cells[4], ProfilesText(k)) << name;
    EXPECT_EQ(cells[5].rfind(std::string(k.doc), 0), 0u)
        << name << ": the meaning starts with the schema's line:\n"
        << k.doc;
  }
  for (const auto& [name, cells] : rows) {
    bool known = false;
    for (const KeySpec& k : ConfigSchema()) known = known || FullName(k) == name;
    EXPECT_TRUE(known) << name << " is in docs/configuration.md but is no key";
  }
}

// The man page's entry of a key: "integer, 1 to 256; default 4".
std::string ManSummary(const KeySpec& k) {
  std::string out(TypeName(k.type));
  if (!BoundsText(k).empty()) out += ", " + BoundsText(k);
  if (k.profiles != 0 && k.profiles != kEveryProfile) out += "; profiles " + ProfilesText(k);
  if (!DefaultText(k).empty()) return out + "; default " + DefaultText(k);
  return out + ((k.flags & kRequired) ? "; required" : "; no default");
}

TEST(ManPage, ListsEveryKeyWithTheSchemasTypeDefaultBoundsAndProfiles) {
  const std::string config =
      Section(Read(Source("packaging/txn-recoveryd.8")), "CONFIGURATION") + "\n";
  const std::size_t keys = config.find("\n.SS Keys\n");
  ASSERT_NE(keys, std::string::npos);
  for (const KeySpec& k : ConfigSchema()) {
    if (k.section.empty()) continue;
    const std::string entry = "\n.TP\n.B " + Roff(FullName(k)) + "\n" + Roff(ManSummary(k)) +
                              ".\n.br\n" + Roff(std::string(k.doc)) + ".\n";
    EXPECT_NE(config.find(entry, keys), std::string::npos) << "CONFIGURATION, Keys has no entry\n"
                                                           << entry;
  }
  std::regex named("\n\\.B ([a-z_.\\\\-]+)\n");
  const std::string listed = config.substr(keys);
  for (std::sregex_iterator it(listed.begin(), listed.end(), named), end; it != end; ++it) {
    bool known = false;
    for (const KeySpec& k : ConfigSchema()) known = known || Roff(FullName(k)) == (*it)[1].str();
    EXPECT_TRUE(known) << (*it)[1].str() << " is in the man page but is no key";
  }
}

// A line of the example that sets a key or shows it commented out: its value, and the
// comment that explains it (the comment lines above it and its group of keys, and its own).
struct Shown {
  std::string value;
  std::string comment;
};

bool SetsAKey(const std::string& line) {
  static const std::regex kSets("^#? *[a-z_]+ *=.*");
  return std::regex_match(line, kSets);
}

// The value at the start of `text`: a quoted string, a list, or a bare word.
std::string LeadingValue(const std::string& text) {
  if (text.empty()) return text;
  std::size_t end = text[0] == '"'   ? text.find('"', 1)
                    : text[0] == '[' ? text.find(']')
                                     : text.find(' ') - 1;
  return text.substr(0, end == std::string::npos ? end : end + 1);
}

// Where the example shows `spec`: in its section for a key outside [[watch]], anywhere
// after the first watch otherwise.
std::vector<Shown> ShownInExample(const std::vector<std::string>& lines, const KeySpec& spec) {
  const bool in_watch = spec.section.rfind("watch", 0) == 0;
  const std::string header = in_watch ? "[[watch]]" : "[" + std::string(spec.section) + "]";
  const std::regex sets("^#? *" + std::string(spec.key) + " *= *(.*)$");
  std::vector<Shown> out;
  bool inside = false;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i] == header) inside = true;
    if (!in_watch && !lines[i].empty() && lines[i][0] == '[' && lines[i] != header) inside = false;
    std::smatch m;
    if (!inside || !std::regex_match(lines[i], m, sets)) continue;
    Shown shown{LeadingValue(m[1].str()), lines[i]};
    std::size_t above = i;
    while (above > 0 && SetsAKey(lines[above - 1])) --above;
    while (above > 0 && lines[above - 1].rfind('#', 0) == 0 && !SetsAKey(lines[above - 1]))
      shown.comment = lines[--above].substr(1) + " " + shown.comment;
    // As it reads: one space between words, whatever the lines' breaks.
    shown.comment = std::regex_replace(shown.comment, std::regex(" +"), " ");
    out.push_back(shown);
  }
  return out;
}

TEST(ExampleConfiguration, ShowsEveryKeyWithItsDefaultAndTheValuesItAccepts) {
  const std::string example = Read(Source("config/txn-recoveryd.toml"));
  std::vector<std::string> lines;
  std::istringstream in(example);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  // Said once for every duration: the comments need not repeat it.
  EXPECT_NE(example.find("every duration must be positive"), std::string::npos);
  for (const KeySpec& k : ConfigSchema()) {
    const std::string name = FullName(k);
    if (k.section.empty() || k.type == KeyType::kTable || k.type == KeyType::kTableList) {
      EXPECT_TRUE(example.find("[" + name + "]") != std::string::npos ||
                  std::regex_search(example, std::regex("(^|\n)#? *" + std::string(k.key) + " *=")))
          << name << " is not shown in the example";
      continue;
    }
    if (IsStateAlias(k)) {  // listed among its state's names
      EXPECT_NE(example.find(std::string(k.key)), std::string::npos) << name;
      continue;
    }
    const std::vector<Shown> shown = ShownInExample(lines, k);
    if (shown.empty()) {
      ADD_FAILURE() << name << " is not shown in the example";
      continue;
    }
    if (!DefaultText(k).empty()) {
      bool with_default = false;
      for (const auto& s : shown)
        for (const auto& profile : ProfilesOf(k))
          with_default = with_default || SameValue(s.value, DefaultFor(k, profile));
      EXPECT_TRUE(with_default) << name << " is never shown with its default " << DefaultText(k);
    }
    const std::string bounds = BoundsText(k);
    if (!bounds.empty() && bounds != "positive") {
      bool said = false;
      for (const auto& s : shown) said = said || s.comment.find(bounds) != std::string::npos;
      EXPECT_TRUE(said) << name << ": the example's comment does not say \"" << bounds << "\"";
    }
  }
}

// The example explains sweep.lease's least value by the lease-deadline margin, which is the
// library's (LeaseOptions::margin; the daemon has no key for it): stated otherwise, an
// operator would size the lease by a margin the daemon does not keep.
TEST(ExampleConfiguration, StatesTheLeaseMarginTheLibraryKeeps) {
  const std::string example = Read(Source("config/txn-recoveryd.toml"));
  const std::string margin = FormatDuration(txn_recovery::LeaseOptions{}.margin);
  EXPECT_NE(example.find("stops writing " + margin + " before its lease"), std::string::npos)
      << "the margin is " << margin;
  std::regex any_margin("stops writing ([0-9a-z]+) before");
  for (std::sregex_iterator it(example.begin(), example.end(), any_margin), end; it != end; ++it)
    EXPECT_EQ((*it)[1].str(), margin);
}

// The schema's defaults are the ones the loader applies: a watch of each profile that sets
// nothing but what its profile requires, as check-config describes it, shows every key with
// the schema's default for that profile.
TEST(ConfigSchema, HasTheDefaultsTheLoaderApplies) {
  const std::map<std::string, std::string> required = {
      {"transfer", ""},
      {"operations", "profile = \"operations\"\n"},
      {"tagged-insert", "profile = \"tagged-insert\"\ntagged_collections = [\"orders\"]\n"},
      {"steps",
       "profile = \"steps\"\nsteps = [{collection = \"a\", key_path = \"k\", inc = {n = "
       "\"v\"}}]\n"}};
  for (const auto& [profile, keys] : required) {
    SCOPED_TRACE(profile);
    const std::string path = ::testing::TempDir() + "txn_recoveryd_schema_defaults.toml";
    std::ofstream(path) << "[mongodb]\nuri = \"mongodb://h\"\n[[watch]]\nname = \"w\"\n"
                        << "database = \"d\"\n"
                        << keys;
    Config c;
    txn_recovery::Status s = LoadConfig(
        path, [](const std::string&) { return std::optional<std::string>(); }, &c);
    std::remove(path.c_str());
    ASSERT_TRUE(s.ok()) << s.message();
    // "section.key" -> the value as described.
    std::map<std::string, std::string> described;
    std::istringstream text(DescribeConfig(c));
    std::string section;
    std::smatch m;
    for (std::string line; std::getline(text, line);) {
      if (std::regex_match(line, m, std::regex(R"(^\[\[?([a-z.]+)\]\]?$)"))) section = m[1];
      if (std::regex_match(line, m, std::regex(R"(^([a-z_]+) = (.*?)(  # .*)?$)")))
        described[section + "." + m[1].str()] = m[2];
    }
    for (const KeySpec& k : ConfigSchema()) {
      if (DefaultText(k).empty() || IsStateAlias(k) || k.section == "watch.steps") continue;
      if (k.profiles != 0 && !(k.profiles & ProfileBit(profile))) continue;
      if (FullName(k) == "watch.profile" && profile != "transfer") continue;  // set by the file
      const std::string expected = DefaultFor(k, profile);
      auto it = described.find(FullName(k));
      if (expected == "[]") {  // an empty list is not described
        EXPECT_TRUE(it == described.end()) << FullName(k) << " = " << it->second;
        continue;
      }
      ASSERT_NE(it, described.end()) << FullName(k) << " is not described";
      EXPECT_TRUE(SameValue(it->second, expected))
          << FullName(k) << ": the loader applies " << it->second << ", the schema says "
          << expected;
    }
  }
}

TEST(ConfigSchema, NamesEachKeyOnceAndAcceptsItsOwnDefaults) {
  std::set<std::string> names;
  for (const KeySpec& k : ConfigSchema()) {
    EXPECT_TRUE(names.insert(FullName(k)).second) << FullName(k) << " twice";
    const std::vector<std::string> choices = Choices(k);
    if (choices.empty() || DefaultText(k).empty()) continue;
    for (const auto& profile : ProfilesOf(k)) {
      std::string value = DefaultFor(k, profile);
      value = value.substr(1, value.size() - 2);
      EXPECT_NE(std::find(choices.begin(), choices.end(), value), choices.end())
          << FullName(k) << ": " << value;
    }
  }
}

// The values the completions offer for --log-format and --log-level are the log keys'.
TEST(Completions, OfferTheValuesOfTheLogKeys) {
  const std::string bash = Read(Source("packaging/completions/txn-recoveryd.bash"));
  const std::string zsh = Read(Source("packaging/completions/_txn-recoveryd"));
  for (const char* key : {"format", "level"}) {
    std::string values;
    for (const auto& v : Choices(SchemaKey("log", key))) values += (values.empty() ? "" : " ") + v;
    std::smatch m;
    const std::string option = std::string("--log-") + key;
    EXPECT_TRUE(std::regex_search(
        bash, m, std::regex(option + "\\)\\s*COMPREPLY=\\(\\$\\(compgen -W \"([^\"]*)\"")))
        << option;
    if (!m.empty()) {
      EXPECT_EQ(m[1].str(), values) << "bash " << option;
    }
    EXPECT_TRUE(
        std::regex_search(zsh, m, std::regex(option + "\\[[^\\]]*\\]:[a-z]+:\\(([^)]*)\\)")))
        << option;
    if (!m.empty()) {
      EXPECT_EQ(m[1].str(), values) << "zsh " << option;
    }
  }
}

// The exit codes daemon/base/exit_codes.h defines: name -> value.
std::map<std::string, int> ExitCodes() {
  const std::string header = Read(Source("daemon/base/exit_codes.h"));
  std::map<std::string, int> codes;
  std::regex code(R"(inline constexpr int (kExit[A-Za-z]+) = ([0-9]+);)");
  for (std::sregex_iterator it(header.begin(), header.end(), code), end; it != end; ++it)
    codes[(*it)[1]] = std::stoi((*it)[2]);
  return codes;
}

TEST(ExitCodes, EachIsUsedAndDocumentedInTheManPageTheReadmeAndOperatingMd) {
  const auto codes = ExitCodes();
  ASSERT_GE(codes.size(), 8u);
  // Every code but 0 is returned somewhere: a code defined and never used would be
  // documented for a case that cannot happen.
  std::string code_text;
  for (const auto& e : fs::recursive_directory_iterator(Source("daemon")))
    if (e.path().extension() == ".cc") code_text += Read(e.path());
  const std::string page = Section(Read(Source("packaging/txn-recoveryd.8")), "EXIT STATUS");
  const std::string operating = Read(Source("docs/operating.md"));
  const std::string readme = Read(Source("README.md"));
  std::set<int> documented;
  for (const auto& [name, value] : codes) {
    const std::string n = std::to_string(value);
    if (value != 0) {
      EXPECT_NE(code_text.find(name), std::string::npos) << name << " is never used";
    }
    EXPECT_NE(page.find("\n.B " + n + "\n"), std::string::npos)
        << n << " (" << name << ") is not under the man page's EXIT STATUS";
    EXPECT_NE(operating.find("\n| " + n + " | "), std::string::npos)
        << n << " (" << name << ") is not in docs/operating.md's table of exit codes";
    if (value > 1) {
      EXPECT_TRUE(std::regex_search(readme, std::regex("[\\s,;]" + n + "\\s+[a-z]")))
          << n << " (" << name << ") is not among README.md's exit codes";
    }
    documented.insert(value);
  }
  // And the man page lists no code the program does not have.
  std::regex listed("\n\\.B ([0-9]+)\n");
  for (std::sregex_iterator it(page.begin(), page.end(), listed), end; it != end; ++it)
    EXPECT_EQ(documented.count(std::stoi((*it)[1])), 1u) << "EXIT STATUS lists " << (*it)[1];
}

// The metric families the program declares (Describe("name", ...)): the daemon's /metrics
// and the one-shot sweep's textfile.
std::set<std::string> DeclaredMetrics() {
  std::set<std::string> names;
  std::regex describe(R"re(Describe\(\s*"([a-z_:]+)")re");
  for (const auto& e : fs::recursive_directory_iterator(Source("daemon"))) {
    if (e.path().extension() != ".cc") continue;
    const std::string text = Read(e.path());
    for (std::sregex_iterator it(text.begin(), text.end(), describe), end; it != end; ++it)
      names.insert((*it)[1]);
  }
  return names;
}

TEST(MonitoringReference, NamesEveryMetricTheProgramExportsAndNoOther) {
  const std::set<std::string> declared = DeclaredMetrics();
  ASSERT_GE(declared.size(), 30u);
  const std::string monitoring = Read(Source("docs/monitoring.md"));
  // monitoring.md writes the family names after the first as suffixes: "`_paused`".
  for (const auto& name : declared) {
    const bool full = monitoring.find("`" + name) != std::string::npos;
    std::string suffix;
    for (const char* prefix : {"txn_recoveryd_oneshot_sweep", "txn_recoveryd"})
      if (suffix.empty() && name.rfind(prefix, 0) == 0) suffix = name.substr(std::strlen(prefix));
    const bool abbreviated = !suffix.empty() && monitoring.find("`" + suffix) != std::string::npos;
    EXPECT_TRUE(full || abbreviated) << name << " is not in docs/monitoring.md";
  }
  // Every metric a document names is one the program exports (a histogram's series
  // carry _bucket, _sum and _count; alerts' recording rules are not metrics).
  std::regex named(R"(\b((txn_recoveryd|process)_[a-z_]*[a-z]))");
  for (const char* doc : {"README.md", "docs/monitoring.md", "docs/upgrading.md", "docs/runbook.md",
                          "docs/operating.md", "docs/fleet.md", "docs/deploying.md",
                          "packaging/txn-recoveryd.8", "deploy/prometheus/alerts.yml"}) {
    const std::string text = Read(Source(doc));
    for (std::sregex_iterator it(text.begin(), text.end(), named), end; it != end; ++it) {
      std::string name = (*it)[1];
      if (name.find("build_info:seen") != std::string::npos || name == "txn_recoveryd_members" ||
          name == "txn_recoveryd_control" || name == "txn_recoveryd_rehearsal" ||
          name == "txn_recoveryd_quarantine")
        continue;  // a recording rule's name, collections of the daemon's own (rehearse's
                   // scratch collections start with txn_recoveryd_rehearsal_)
      for (const char* suffix : {"_bucket", "_sum", "_count"})
        if (!declared.count(name) && name.size() > std::strlen(suffix) &&
            name.compare(name.size() - std::strlen(suffix), std::string::npos, suffix) == 0)
          name.resize(name.size() - std::strlen(suffix));
      EXPECT_TRUE(declared.count(name))
          << doc << " names " << (*it)[1] << ", which is not exported";
    }
  }
}

TEST(Tree, CitesOnlyDocumentsItContains) {
  // The design card this project was started from is not part of the tree, and users do
  // not have it: the prose contract is docs/. Its file name, spelt in parts so that this
  // test does not cite it itself.
  const std::string card = std::string("DESIGN") + ".md";
  std::vector<std::string> citing;
  fs::path root = Source("");
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator();
       ++it) {
    std::string rel = fs::relative(it->path(), root).string();
    if (it->is_directory() &&
        (rel.rfind('.', 0) == 0 || rel.rfind("build", 0) == 0 || rel == "dist" ||
         rel == "testdb/target" || rel.find("corpus") != std::string::npos)) {
      it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file()) continue;
    if (Read(it->path()).find(card) != std::string::npos) citing.push_back(rel);
  }
  EXPECT_TRUE(citing.empty()) << "cite docs/ instead: " << ::testing::PrintToString(citing);
}

TEST(ContainerImage, ShipsNoConfigurationAndCarriesItsLabelsAndHealthcheck) {
  const std::string file = Read(Source("packaging/Containerfile"));
  ASSERT_FALSE(file.empty());
  // With the example baked in at the default path, an image run without its own file
  // would start recovering the example's databases.
  std::regex copies_config(R"((^|\n)COPY[^\n]* /etc/txn-recoveryd/(txn-recoveryd\.toml)? *(\n|$))");
  EXPECT_FALSE(std::regex_search(file, copies_config));
  // The files the runtime stage adds are laid out by image-files.sh: none under /etc.
  const std::string files = Read(Source("packaging/image-files.sh"));
  ASSERT_FALSE(files.empty());
  EXPECT_FALSE(std::regex_search(files, std::regex(R"((^|\n)put \S+ /?etc/)")));
  EXPECT_NE(files.find("\nput usr/sbin/txn-recoveryd "), std::string::npos);
  for (const char* label :
       {"org.opencontainers.image.title", "org.opencontainers.image.description",
        "org.opencontainers.image.version", "org.opencontainers.image.revision",
        "org.opencontainers.image.source", "org.opencontainers.image.documentation"})
    EXPECT_NE(file.find(label), std::string::npos) << label;
  EXPECT_NE(file.find("\nHEALTHCHECK "), std::string::npos);
  EXPECT_NE(file.find("/livez"), std::string::npos) << "liveness, never the database";
  EXPECT_NE(file.find("CMD [\"run\"]"), std::string::npos)
      << "the default --config is the mounted file";
}

}  // namespace
}  // namespace txn_recovery::daemon
