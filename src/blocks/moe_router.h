#pragma once
// How a mixture-of-experts layer picks a row's experts and weighs them (families-and-formats §1.5), on the
// host from the router's logits of that row alone, so a row's choice never depends on the rows beside it.
//   scores: softmax over all experts, sigmoid of each logit, or sqrt(softplus(logit)) (DeepSeek-V4's sqrtsoftplus);
//   selection: the top k by score + correction_bias (the bias picks experts, never weighs them); with groups > 1
//     only the experts of the top_groups groups compete, a group scored by the sum of its two best;
//   weights: the chosen experts' unbiased scores, divided by their sum where norm_top_k, times scaling, times
//     the expert's own scale where expert_scale is given (Gemma 4's per_expert_scale).
// Hash routing (DeepSeek-V4's hash_moe layers): where token_experts is given, a row's experts are that table's
// top_k entries for the row's token (a frozen token -> experts table), weighed as above from the learned scores.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace tf {

struct RouterSpec {
  enum class Score { Softmax, Sigmoid, SqrtSoftplus };
  Score score = Score::Softmax;
  int experts = 0, top_k = 0;
  int groups = 1, top_groups = 1;           // group-limited selection (n_group, topk_group)
  bool norm_top_k = false;                  // norm_topk_prob
  float scaling = 1.0f;                     // routed_scaling_factor
  std::vector<float> correction_bias;       // e_score_correction_bias: one per expert, or empty
  std::vector<float> expert_scale;          // per-expert weight multipliers: one per expert, or empty
  std::vector<std::int32_t> token_experts;  // hash routing: [vocab, top_k] expert ids, or empty
};

struct ExpertChoice {
  int expert = 0;
  float weight = 0.0f;
};

// The spec's problem in a sentence (for a CheckpointError), or empty when it is consistent.
std::string router_spec_problem(const RouterSpec& spec);

// One row's top_k experts from its `experts` logits, in ascending expert order (the order their outputs are
// summed in). Ties go to the lower index.
std::vector<ExpertChoice> route_row(std::span<const float> logits, const RouterSpec& spec);
// The same for a hash-routed row of token `token` (spec.token_experts given; std::out_of_range for a token
// beyond the table).
std::vector<ExpertChoice> route_row(std::span<const float> logits, const RouterSpec& spec, std::int32_t token);

}  // namespace tf
