// Documentation drift: what the man page, the shell completions, the example configuration
// and the container image say, checked against the code that defines it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "cli.h"
#include "config.h"
#include "config_schema.h"

namespace txn_recoveryd {
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

TEST(ExampleConfiguration, ShowsEveryKeyAndTheLimitsTheCodeApplies) {
  const std::string example = Read(Source("config/txn-recoveryd.toml"));
  for (const KeySpec& k : ConfigSchema()) {
    if (k.section.empty() || k.section == "watch.steps" || k.type == KeyType::kTable) continue;
    const std::string key = FullName(k), last(k.key);
    if (k.section == "watch.states") {
      EXPECT_NE(example.find(last), std::string::npos) << key;
      continue;
    }
    std::regex shown("(^|\n)#? *" + last + " *=");
    EXPECT_TRUE(std::regex_search(example, shown)) << key << " is not shown in the example";
  }
  // The loader caps daemon.jitter at 0.9 (a wait of zero would sweep in a loop).
  EXPECT_NE(example.find("0 to 0.9"), std::string::npos);
  EXPECT_EQ(example.find("0 to 1."), std::string::npos);
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
        (rel.rfind(".", 0) == 0 || rel.rfind("build", 0) == 0 || rel == "dist" ||
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
}  // namespace txn_recoveryd
