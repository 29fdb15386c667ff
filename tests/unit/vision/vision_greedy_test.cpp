// Image chat turns on the MLX backend against the golden's float64 transformers references: the image encoder
// that load_image_encoder builds (our decoding, preprocessing and tower), its embeddings at the placeholder
// rows, M-RoPE positions as get_rope_index's, then the prompt's last logits and 12 greedy tokens.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "backends/compiled_backends.h"
#include "families/image_encoder.h"
#include "families/model.h"
#include "golden_files.h"

namespace tf {
namespace {

using vision::testing::golden_path;

struct Golden {
  std::unique_ptr<Backend> backend = make_backend("mlx");
  std::unique_ptr<Model> model = load_model(golden_path(""), *backend);
  std::unique_ptr<ImageEncoder> encoder = load_image_encoder(golden_path(""), *backend);
  nlohmann::json ref = nlohmann::json::parse(std::ifstream(golden_path("golden.json")));
};

Golden& golden() {
  static Golden g;
  return g;
}

// The case's images as spans at its placeholder runs, each checked against the number of placeholders.
std::shared_ptr<const StreamImages> images_of(const nlohmann::json& c) {
  const auto& g = golden();
  const auto ids = c["prompt_ids"].get<std::vector<std::int32_t>>();
  std::vector<ImageSpan> spans;
  std::size_t at = 0;
  for (const auto& f : c["images"]) {
    const auto img = vision::decode_image(vision::testing::read_bytes(golden_path("images/" + f.get<std::string>())));
    ImageSpan s = g.encoder->encode(img);
    while (at < ids.size() && ids[at] != g.encoder->token_ids().image) ++at;
    s.start = static_cast<std::int64_t>(at);
    std::int64_t run = 0;
    while (at < ids.size() && ids[at] == g.encoder->token_ids().image) ++at, ++run;
    EXPECT_EQ(run, s.tokens()) << f;
    EXPECT_EQ(run, g.encoder->tokens_for(img.width, img.height)) << f;
    spans.push_back(std::move(s));
  }
  return std::make_shared<const StreamImages>(std::move(spans));
}

std::int32_t argmax(const float* row, std::int64_t n) {
  return static_cast<std::int32_t>(std::max_element(row, row + n) - row);
}

TEST(VisionGreedy, EncoderAndTokenIdsFromTheCheckpoint) {
  auto& g = golden();
  ASSERT_NE(g.encoder, nullptr);
  EXPECT_EQ(g.encoder->token_ids().image, g.ref["image_pad_id"].get<int>());
  EXPECT_EQ(g.encoder->token_ids().vision_start, g.ref["vision_start_id"].get<int>());
  EXPECT_GT(g.encoder->bytes(), 0u);
}

TEST(VisionGreedy, MropePositionsAsGetRopeIndex) {
  auto& g = golden();
  for (const auto& [name, c] : g.ref["cases"].items()) {
    const auto imgs = images_of(c);
    const std::int64_t n = static_cast<std::int64_t>(c["prompt_ids"].size());
    std::vector<std::int32_t> thw;
    imgs->positions(0, n, thw);
    std::vector<std::uint64_t> shape;
    const auto want = vision::testing::tensor<std::int64_t>(vision::testing::references(), "positions." + name, &shape);
    ASSERT_EQ(shape, (std::vector<std::uint64_t>{3, std::uint64_t(n)})) << name;
    for (std::int64_t p = 0; p < n; ++p)
      for (int a = 0; a < 3; ++a)
        ASSERT_EQ(thw[std::size_t(3 * p + a)], want[std::size_t(a * n + p)])
            << name << " position " << p << " axis " << a;
    // decoding after the prompt continues at the rope delta get_rope_index reports
    thw.clear();
    imgs->positions(n, 1, thw);
    EXPECT_EQ(thw[0], n + c["rope_delta"].get<std::int64_t>()) << name;
  }
}

TEST(VisionGreedy, LogitsAndGreedyAsTheFloat64Reference) {
  auto& g = golden();
  const std::int64_t vocab = g.model->info().vocab;
  for (const auto& [name, c] : g.ref["cases"].items()) {
    const auto ids = c["prompt_ids"].get<std::vector<std::int32_t>>();
    auto state = g.model->new_state();
    state->set_images(images_of(c));
    const auto logits = g.model->forward(*state, ids, 3);
    double worst = 0;
    for (int r = 0; r < 3; ++r)
      for (std::int64_t v = 0; v < vocab; ++v)
        worst = std::max(
            worst, std::abs(double(logits[std::size_t(r * vocab + v)]) - c["logits"][r][std::size_t(v)].get<double>()));
    std::vector<std::int32_t> greedy{argmax(&logits[std::size_t(2 * vocab)], vocab)};
    while (greedy.size() < c["greedy"].size()) {
      const auto step = g.model->forward(*state, std::span<const std::int32_t>(&greedy.back(), 1), 1);
      greedy.push_back(argmax(step.data(), vocab));
    }
    std::printf("%s: %zu prompt tokens, last-3 logits max |diff| %.3g, greedy %s\n", name.c_str(), ids.size(), worst,
                greedy == c["greedy"].get<std::vector<std::int32_t>>() ? "equal" : "DIFFERS");
    EXPECT_LT(worst, 1e-4) << name;
    EXPECT_EQ(greedy, c["greedy"].get<std::vector<std::int32_t>>()) << name;
  }
}

// A prompt fed in two chunks, the cut inside an image, continues exactly as in one call.
TEST(VisionGreedy, ChunkedPrefillThroughAnImageIsExact) {
  auto& g = golden();
  const auto& c = g.ref["cases"]["two_images"];
  const auto ids = c["prompt_ids"].get<std::vector<std::int32_t>>();
  const auto imgs = images_of(c);
  const std::int64_t cut = imgs->spans()[0].start + 5;
  auto whole = g.model->new_state();
  whole->set_images(imgs);
  const auto a = g.model->forward(*whole, ids, 1);
  auto parts = g.model->new_state();
  parts->set_images(imgs);
  g.model->forward(*parts, std::span<const std::int32_t>(ids.data(), std::size_t(cut)), 1);
  const auto b =
      g.model->forward(*parts, std::span<const std::int32_t>(ids.data() + cut, ids.size() - std::size_t(cut)), 1);
  EXPECT_EQ(argmax(a.data(), g.model->info().vocab), argmax(b.data(), g.model->info().vocab));
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, double(std::abs(a[i] - b[i])));
  EXPECT_LT(worst, 1e-5);
}

// Without its images the same prompt gives other logits: the image rows reach the answer.
TEST(VisionGreedy, ImagesChangeTheAnswer) {
  auto& g = golden();
  const auto& c = g.ref["cases"]["one_image"];
  const auto ids = c["prompt_ids"].get<std::vector<std::int32_t>>();
  auto plain = g.model->new_state();
  const auto a = g.model->forward(*plain, ids, 1);
  auto with = g.model->new_state();
  with->set_images(images_of(c));
  const auto b = g.model->forward(*with, ids, 1);
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, double(std::abs(a[i] - b[i])));
  EXPECT_GT(worst, 1e-2);
}

}  // namespace
}  // namespace tf
