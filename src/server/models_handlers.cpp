// GET /health, GET /metrics and the /v1/models routes.
#include <fmt/format.h>

#include "server/api_error.h"
#include "server/handlers.h"
#include "server/http_reply.h"
#include "server/metrics_text.h"

namespace tf::server {

namespace {

nlohmann::ordered_json model_object(const ApiContext& ctx, const std::string& id) {
  nlohmann::ordered_json m = {{"id", id}, {"object", "model"}, {"created", ctx.started_at()}, {"owned_by", "tensorfold"}};
  const auto& names = ctx.options().names;
  if (id == names.id) m["aliases"] = names.aliases;
  else m["parent"] = names.id;
  if (ctx.ready()) {
    const auto context = ctx.service().context_length();
    m["context_length"] = context;
    m["max_model_len"] = context;
  }
  return m;
}

}  // namespace

void handle_health(ApiContext& ctx, const httplib::Request&, httplib::Response& res) {
  if (!ctx.ready()) {
    send_json(res, 503, {{"status", "loading"}});
    return;
  }
  nlohmann::ordered_json body = {{"status", "ok"}};
  // /health is open even when API keys guard the rest: then it says no more than that the server is up.
  if (ctx.options().api_keys.empty()) {
    const auto s = ctx.service().stats();
    body["busy"] = s.busy;
    body["requests_running"] = s.requests_running;
    body["requests_waiting"] = s.requests_waiting;
    body["requests_total"] = s.requests_total;
    body["prompt_tokens_total"] = s.prompt_tokens_total;
    body["completion_tokens_total"] = s.completion_tokens_total;
    body["drafted_total"] = s.drafted_total;
    body["accepted_total"] = s.accepted_total;
    body["rounds_total"] = s.rounds_total;
    body["drafter"] = s.drafter;
    if (!s.prompt_precision.empty()) body["prompt_precision"] = s.prompt_precision;
    body["cached_tokens_total"] = s.prefix_cache_hit_tokens;
    if (s.prompt_cache)
      body["prompt_cache"] = {{"queries", s.prefix_cache_queries},           {"hits", s.prefix_cache_hits},
                              {"entries", s.prefix_cache_entries},           {"bytes", s.prefix_cache_bytes},
                              {"budget_bytes", s.prefix_cache_budget_bytes}, {"snapshot_files", s.snapshot_files},
                              {"snapshot_bytes", s.snapshot_bytes},          {"snapshots_loaded", s.snapshots_loaded},
                              {"snapshots_refused", s.snapshots_refused}};
  }
  send_json(res, 200, body);
}

void handle_metrics(ApiContext& ctx, const httplib::Request&, httplib::Response& res) {
  // Before the engine loads there is nothing to count; the loading 503 says so (scrapers retry).
  res.status = 200;
  res.set_content(prometheus_metrics(ctx.service().stats(), ctx.options().names.id), "text/plain; version=0.0.4");
}

void handle_list_models(ApiContext& ctx, const httplib::Request&, httplib::Response& res) {
  const auto& names = ctx.options().names;
  nlohmann::ordered_json data = nlohmann::ordered_json::array({model_object(ctx, names.id)});
  for (const auto& alias : names.aliases)
    if (alias != names.id) data.push_back(model_object(ctx, alias));
  send_json(res, 200, {{"object", "list"}, {"data", data}});
}

void handle_get_model(ApiContext& ctx, const std::string& id, httplib::Response& res) {
  if (!ctx.options().names.matches(id)) throw model_not_found(id);
  send_json(res, 200, model_object(ctx, id));
}

}  // namespace tf::server
