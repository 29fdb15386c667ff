#pragma once
// From a validated request to a running generation: the context check and length limit, the sampling
// settings, the chat prompt, and the Generation that owns a submitted stream for the life of one reply.
#include <httplib.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/generation.h"
#include "server/api_context.h"
#include "server/disconnect_watch.h"
#include "server/sampling_fields.h"

namespace tf::server {

// The engine request for a tokenized prompt. Refuses (400) an empty prompt, and a prompt that with the
// requested max tokens does not fit the context (code context_length_exceeded, the message states the
// maximum). Without a requested limit, the limit is the server default clipped to the context end. A limit
// of 0 (completions' echo scoring its prompt) generates nothing, and its prompt may fill the context.
GenerationRequest plan_generation(const InferenceService& service, const ServerOptions& options,
                                  std::vector<std::int32_t> prompt, const SamplingFields& fields,
                                  const std::string& prompt_param);

// Choice `index` of a request (n > 1, best_of): the same request with the seed choice_seed(seed, index), the
// seed being the request's, else the prompt's hash (engine/sampler.h).
GenerationRequest choice_request(const GenerationRequest& base, std::int64_t index);

// Renders the chat template; a template error is a 400 naming `param`.
std::string render_chat_prompt(const InferenceService& service, const ChatInput& input,
                               const std::string& param = "messages");
// Renders the chat template and tokenizes the text (special tokens come from the template). A template
// error is a 400 naming `param`.
std::vector<std::int32_t> chat_prompt(const InferenceService& service, const ChatInput& input,
                                      const std::string& param = "messages");

// One submitted generation, registered with the server (for shutdown) and watched for the client leaving.
// Destroying it cancels the generation if it has not finished.
class Generation {
 public:
  Generation(ApiContext& context, const httplib::Request& request, GenerationRequest generation);
  ~Generation();
  Generation(const Generation&) = delete;
  Generation& operator=(const Generation&) = delete;

  GenerationStream& stream() { return *stream_; }
  void cancel() { stream_->cancel(); }
  // Stops watching the connection (the reply is done with it).
  void stop_watching() { watch_.stop(); }

  struct Collected {
    std::string text;
    GenerationResult result;
  };
  // Waits for the whole text (non-streamed replies).
  Collected collect();

 private:
  ApiContext& context_;
  std::shared_ptr<GenerationStream> stream_;
  std::uint64_t active_id_ = 0;
  DisconnectWatch watch_;
};

// Throws the ApiError a finished non-streamed generation deserves when it did not complete: a 500 for an
// engine error, a 503 when it was cancelled (the server is stopping, or the client left).
void check_finished(const GenerationResult& result);

}  // namespace tf::server
