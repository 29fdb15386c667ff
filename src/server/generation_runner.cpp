#include "server/generation_runner.h"

#include <fmt/format.h>

#include <algorithm>

#include "server/api_error.h"
#include "text/template/template_error.h"

namespace tf::server {

GenerationRequest plan_generation(const InferenceService& service, const ServerOptions& options,
                                  std::vector<std::int32_t> prompt, const SamplingFields& fields,
                                  const std::string& prompt_param) {
  const auto n = static_cast<std::int64_t>(prompt.size());
  if (n == 0)
    throw invalid_request(fmt::format("Invalid '{}': the prompt is empty (it has no tokens).", prompt_param),
                          prompt_param, "invalid_value");
  const std::int64_t context = service.context_length();
  const std::int64_t room = context - n;
  if (fields.max_tokens) {
    if (n + *fields.max_tokens > context)
      throw context_length_exceeded(context, n, *fields.max_tokens, true, prompt_param, fields.max_tokens_param);
  } else if (room < 1) {
    throw context_length_exceeded(context, n, 0, false, prompt_param, fields.max_tokens_param);
  }
  GenerationRequest r;
  r.prompt = std::move(prompt);
  r.sampling = merge_sampling(service.default_sampling(), fields);
  r.seed = fields.seed;
  const std::int64_t fallback = options.default_max_tokens > 0 ? options.default_max_tokens : room;
  r.max_tokens = fields.max_tokens ? *fields.max_tokens : std::min(fallback, room);
  r.generate = r.max_tokens > 0;
  r.stop = fields.stop;
  r.draft = fields.draft;
  r.adjust = fields.adjust;
  const auto vocab = service.vocab_size();
  for (const auto& [id, bias] : r.adjust.bias)
    if (id >= vocab)
      throw invalid_request(
          fmt::format("Invalid 'logit_bias': token id {} is outside the vocabulary (0 to {}).", id, vocab - 1),
          "logit_bias", "invalid_value");
  r.logprobs = fields.logprobs;
  return r;
}

GenerationRequest choice_request(const GenerationRequest& base, std::int64_t index) {
  GenerationRequest r = base;
  r.seed = choice_seed(base.seed ? *base.seed : seed_from_prompt(base.prompt), index);
  return r;
}

std::string render_chat_prompt(const InferenceService& service, const ChatInput& input, const std::string& param) {
  try {
    return service.render_chat(input);
  } catch (const TemplateError& e) {
    throw invalid_request(fmt::format("The chat template could not render these messages: {}", e.what()), param,
                          "chat_template_error");
  }
}

std::vector<std::int32_t> chat_prompt(const InferenceService& service, const ChatInput& input,
                                      const std::string& param) {
  return service.tokenize(render_chat_prompt(service, input, param), /*add_special=*/false);
}

namespace {

// Submits, turning the engine's admission refusal into the client's error (400 or 503 + Retry-After).
std::shared_ptr<GenerationStream> submit_or_refuse(InferenceService& service, GenerationRequest request) {
  try {
    return service.submit(std::move(request));
  } catch (const AdmissionError& e) {
    throw admission_refused(e);
  }
}

}  // namespace

Generation::Generation(ApiContext& context, const httplib::Request& request, GenerationRequest generation)
    : context_(context), stream_(submit_or_refuse(context.service(), std::move(generation))) {
  active_id_ = context_.active().add(stream_);
  const int fd = find_connection_socket(
      ConnectionAddress{request.local_addr, request.local_port, request.remote_addr, request.remote_port});
  std::weak_ptr<GenerationStream> weak = stream_;
  watch_ = DisconnectWatch(fd, [weak] {
    if (auto s = weak.lock()) s->cancel();
  });
}

Generation::~Generation() {
  watch_.stop();
  stream_->cancel();  // no-op once finished; stops the engine when the reply ended early
  context_.active().remove(active_id_);
}

Generation::Collected Generation::collect() {
  Collected c;
  std::string piece;
  while (stream_->next(piece)) c.text += piece;
  c.result = stream_->result();
  return c;
}

void check_finished(const GenerationResult& result) {
  if (result.finish == FinishReason::Error)
    throw server_error(fmt::format("The generation failed: {}", result.error.empty() ? "unknown error" : result.error));
  if (result.finish == FinishReason::Cancelled)
    throw ApiError(503, "server_error", "The generation was cancelled (the server is shutting down).");
}

}  // namespace tf::server
