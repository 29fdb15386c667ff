// Encoding speed of tf::Tokenizer on one core.
//
//   tf_tokenizer_bench MODEL [TEXT_FILE...]
//
// MODEL: a GGUF file, tokenizer.json or a directory with one. TEXT_FILE: English text (default: every file in
// /usr/share/common-licenses, about 250 KB of license prose). The text is encoded in chunks of about 4 KB (a
// prompt's size) cut at line ends. "cold" is the first pass over the text with a freshly loaded tokenizer (its
// word cache empty); "warm" is the best of five later passes. Prints MB/s (10^6 bytes per second).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "text/tokenizer/tokenizer.h"

namespace {

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL [TEXT_FILE...]\n", argv[0]);
    return 2;
  }
  std::string text;
  if (argc > 2) {
    for (int i = 2; i < argc; ++i) text += read_file(argv[i]);
  } else {
    std::vector<std::filesystem::path> files;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/usr/share/common-licenses", ec))
      if (e.is_regular_file()) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) text += read_file(f);
  }
  if (text.empty()) {
    std::fprintf(stderr, "no text to encode\n");
    return 2;
  }
  std::vector<std::string> chunks;
  for (std::size_t pos = 0; pos < text.size();) {
    std::size_t end = std::min(text.size(), pos + 4096);
    const std::size_t nl = text.find('\n', end);
    end = nl == std::string::npos ? text.size() : nl + 1;
    chunks.push_back(text.substr(pos, end - pos));
    pos = end;
  }

  try {
    const auto t_load = std::chrono::steady_clock::now();
    const tf::Tokenizer tok = tf::load_tokenizer(argv[1]);
    const double load_s = seconds_since(t_load);

    std::size_t tokens = 0;
    auto pass = [&] {
      tokens = 0;
      const auto t0 = std::chrono::steady_clock::now();
      for (const auto& c : chunks) tokens += tok.encode(c).size();
      return seconds_since(t0);
    };
    const double cold = pass();
    double warm = 1e9;
    for (int i = 0; i < 5; ++i) warm = std::min(warm, pass());
    const double mb = static_cast<double>(text.size()) / 1e6;
    std::printf("tokenizer: %s (%s, %zu tokens), loaded in %.0f ms\n", argv[1], std::string(tok.model_kind()).c_str(),
                tok.vocab_size(), load_s * 1e3);
    std::printf("text: %.2f MB in %zu chunks, %zu tokens (%.2f bytes/token)\n", mb, chunks.size(), tokens,
                static_cast<double>(text.size()) / static_cast<double>(tokens));
    std::printf("encode cold: %.1f MB/s\n", mb / cold);
    std::printf("encode warm: %.1f MB/s\n", mb / warm);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
