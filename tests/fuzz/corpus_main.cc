// A main() for the fuzz targets where libFuzzer is not available (gcc builds): runs the
// target once on every file of the directories and files given, so that CI always
// exercises the corpus kept in the tree. Arguments starting with '-' (libFuzzer flags)
// are ignored, so that the same command line works for both builds.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

int RunFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
}

}  // namespace

int main(int argc, char** argv) {
  int files = 0;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.empty() || arg[0] == '-') continue;
    std::filesystem::path p(arg);
    if (std::filesystem::is_directory(p)) {
      for (const auto& e : std::filesystem::directory_iterator(p))
        if (e.is_regular_file()) {
          RunFile(e.path());
          ++files;
        }
    } else {
      RunFile(p);
      ++files;
    }
  }
  std::printf("ran %d inputs\n", files);
  return files > 0 ? 0 : 1;
}
