// llama.cpp's own greedy continuation of prompt ids, for the GGUF goldens (scripts/golden/make_qwen3_5_gguf.py
// builds it against the llama.cpp of the pinned llama-cpp-python sdist and runs it). The same JSON as our
// tf_greedy_tool: reads {"cases": [{"prompt_ids": [...]}]}, writes {"cases": [{"greedy": [...], "gaps": [...]}]}
// to stdout, where gaps[i] is the top-1 minus top-2 logit at step i (a small gap marks a near-tie, where float
// rounding may pick either token). The prompt is one batch; then one token a step; EOS does not stop; the CPU
// only, one thread (the sums' order does not depend on a thread count).
//   llama_cpp_greedy MODEL.gguf CASES.json STEPS
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "llama.h"

namespace {

// The ids in a JSON array of integers; the driver reads only the files the script writes.
std::vector<std::vector<llama_token>> read_prompts(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string s = ss.str();
  std::vector<std::vector<llama_token>> out;
  for (std::size_t at = s.find("\"prompt_ids\""); at != std::string::npos; at = s.find("\"prompt_ids\"", at + 1)) {
    const std::size_t open = s.find('[', at), close = s.find(']', open);
    std::vector<llama_token> ids;
    std::stringstream list(s.substr(open + 1, close - open - 1));
    for (std::string item; std::getline(list, item, ',');) ids.push_back(std::stoi(item));
    out.push_back(ids);
  }
  return out;
}

void quiet(ggml_log_level level, const char* text, void*) {
  if (level >= GGML_LOG_LEVEL_WARN) std::fputs(text, stderr);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s MODEL.gguf CASES.json STEPS\n", argv[0]);
    return 2;
  }
  llama_log_set(quiet, nullptr);
  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (model == nullptr) {
    std::fprintf(stderr, "llama_cpp_greedy: cannot load %s\n", argv[1]);
    return 1;
  }
  const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  const int steps = std::stoi(argv[3]);
  std::printf("{\"cases\": [");
  const auto prompts = read_prompts(argv[2]);
  for (std::size_t c = 0; c < prompts.size(); ++c) {
    std::vector<llama_token> tokens = prompts[c];
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = static_cast<uint32_t>(tokens.size() + steps + 8);
    cp.n_batch = cp.n_ubatch = static_cast<uint32_t>(tokens.size());
    cp.n_threads = cp.n_threads_batch = 1;
    llama_context* ctx = llama_init_from_model(model, cp);
    if (ctx == nullptr) {
      std::fprintf(stderr, "llama_cpp_greedy: cannot make a context\n");
      return 1;
    }
    std::vector<llama_token> greedy;
    std::vector<float> gaps, prompt_logits;
    llama_batch batch = llama_batch_get_one(tokens.data(), static_cast<int32_t>(tokens.size()));
    for (int i = 0; i < steps; ++i) {
      if (llama_decode(ctx, batch) != 0) {
        std::fprintf(stderr, "llama_cpp_greedy: llama_decode failed\n");
        return 1;
      }
      const float* logits = llama_get_logits_ith(ctx, -1);
      if (i == 0) prompt_logits.assign(logits, logits + n_vocab);
      int best = 0;
      for (int v = 1; v < n_vocab; ++v)
        if (logits[v] > logits[best]) best = v;
      float second = -1e30f;
      for (int v = 0; v < n_vocab; ++v)
        if (v != best) second = std::max(second, logits[v]);
      greedy.push_back(best);
      gaps.push_back(logits[best] - second);
      tokens.assign(1, best);
      batch = llama_batch_get_one(tokens.data(), 1);
    }
    std::printf("%s{\"greedy\": [", c ? ", " : "");
    for (std::size_t i = 0; i < greedy.size(); ++i) std::printf("%s%d", i ? ", " : "", greedy[i]);
    std::printf("], \"gaps\": [");
    for (std::size_t i = 0; i < gaps.size(); ++i) std::printf("%s%.9g", i ? ", " : "", gaps[i]);
    std::printf("], \"prompt_logits\": [");
    for (int v = 0; v < n_vocab; ++v) std::printf("%s%.9g", v ? ", " : "", prompt_logits[static_cast<std::size_t>(v)]);
    std::printf("]}");
    llama_free(ctx);
  }
  std::printf("]}\n");
  llama_model_free(model);
  llama_backend_free();
  return 0;
}
