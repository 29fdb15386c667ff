#pragma once
// The endpoint handlers. Each reads a request, validates it, and answers; an ApiError thrown from one becomes
// the error envelope (see http_server.cpp).
#include <httplib.h>

#include <string>

#include "server/api_context.h"

namespace tf::server {

// GET /health: {"status": "ok"} once the engine is loaded, 503 {"status": "loading"} before.
void handle_health(ApiContext& ctx, const httplib::Request& req, httplib::Response& res);
// GET /metrics: Prometheus text (server/metrics_text.h). Unlike /health it carries the counters, so it needs
// the API key when the server has keys.
void handle_metrics(ApiContext& ctx, const httplib::Request& req, httplib::Response& res);
// GET /v1/models: the served id, then each alias, each with context_length.
void handle_list_models(ApiContext& ctx, const httplib::Request& req, httplib::Response& res);
// GET /v1/models/{id}
void handle_get_model(ApiContext& ctx, const std::string& id, httplib::Response& res);
// POST /v1/chat/completions
void handle_chat_completions(ApiContext& ctx, const httplib::Request& req, httplib::Response& res);
// POST /v1/completions
void handle_completions(ApiContext& ctx, const httplib::Request& req, httplib::Response& res);
// POST /v1/responses
void handle_create_response(ApiContext& ctx, const httplib::Request& req, httplib::Response& res);
// GET /v1/responses/{id}
void handle_get_response(ApiContext& ctx, const std::string& id, httplib::Response& res);
// POST /tokenize, /v1/tokenize: text or a chat's messages to token ids (llama.cpp's and vLLM's shapes).
void handle_tokenize(ApiContext& ctx, const httplib::Request& req, httplib::Response& res);
// POST /detokenize, /v1/detokenize: token ids to text.
void handle_detokenize(ApiContext& ctx, const httplib::Request& req, httplib::Response& res);
// POST /v1/messages: Anthropic's Messages API.
void handle_messages(ApiContext& ctx, const httplib::Request& req, httplib::Response& res);
// POST /v1/messages/count_tokens
void handle_count_tokens(ApiContext& ctx, const httplib::Request& req, httplib::Response& res);
// GET /openapi.json: the API's OpenAPI 3.1 document (server/openapi_document.h).
void handle_openapi(const httplib::Request& req, httplib::Response& res);
// DELETE /v1/responses/{id}
void handle_delete_response(ApiContext& ctx, const std::string& id, httplib::Response& res);

}  // namespace tf::server
