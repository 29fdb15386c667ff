// Batch renderer for the chat-template conformance suite (tests/conformance/templates/): reads one JSON
// request per line on stdin and writes one JSON result per line on stdout, so that thousands of
// (template, conversation) cases run in one process.
//
// request: {"template_file": PATH | "template": SOURCE, "messages": [...], "tools": [...] (optional),
//           "documents": [...] (optional), "add_generation_prompt": bool, "kwargs": {...},
//           "special_tokens": {...}, "now": "YYYY-MM-DDTHH:MM:SS" (optional)}
// result:  {"ok": true, "text": "..."} or {"ok": false, "kind": "syntax|runtime|raised|limit|input", "error": "..."}
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>

#include "text/template/chat_template.h"

namespace {

const char* kind_name(tf::TemplateError::Kind k) {
  switch (k) {
    case tf::TemplateError::Kind::Syntax: return "syntax";
    case tf::TemplateError::Kind::Runtime: return "runtime";
    case tf::TemplateError::Kind::Raised: return "raised";
    case tf::TemplateError::Kind::Limit: return "limit";
    case tf::TemplateError::Kind::Input: return "input";
  }
  return "?";
}

}  // namespace

int main() {
  std::ios::sync_with_stdio(false);
  std::map<std::string, std::shared_ptr<tf::ChatTemplate>> cache;
  std::map<std::string, tf::TemplateError> compile_errors;
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    nlohmann::ordered_json out = nlohmann::ordered_json::object();
    try {
      const auto req = nlohmann::ordered_json::parse(line);
      if (req.contains("id")) out["id"] = req["id"];
      std::string key, source;
      if (req.contains("template_file")) {
        key = "file:" + req["template_file"].get<std::string>();
        if (!cache.count(key) && !compile_errors.count(key)) {
          std::ifstream f(req["template_file"].get<std::string>(), std::ios::binary);
          std::ostringstream ss;
          ss << f.rdbuf();
          source = ss.str();
        }
      } else {
        source = req["template"].get<std::string>();
        key = "src:" + source;
      }
      if (auto e = compile_errors.find(key); e != compile_errors.end()) throw e->second;
      if (!cache.count(key)) {
        try {
          cache[key] = std::make_shared<tf::ChatTemplate>(source);
        } catch (const tf::TemplateError& e) {
          compile_errors.emplace(key, e);
          throw;
        }
      }
      tf::ChatInput in;
      if (req.contains("messages")) in.messages = req["messages"];
      tf::normalize_chat_messages(in.messages);
      if (req.contains("tools") && !req["tools"].is_null()) in.tools = req["tools"];
      if (req.contains("documents") && !req["documents"].is_null()) in.documents = req["documents"];
      in.add_generation_prompt = req.contains("add_generation_prompt") && req["add_generation_prompt"].get<bool>();
      nlohmann::ordered_json kwargs = nlohmann::ordered_json::object();
      if (req.contains("special_tokens")) kwargs = req["special_tokens"];
      if (req.contains("kwargs"))
        for (auto it = req["kwargs"].begin(); it != req["kwargs"].end(); ++it) kwargs[it.key()] = it.value();
      in.kwargs = kwargs;
      tf::RenderOptions opts;
      if (req.contains("now")) opts.now = tf::parse_template_time(req["now"].get<std::string>());
      out["ok"] = true;
      out["text"] = cache[key]->render(in, opts);
    } catch (const tf::TemplateError& e) {
      out["ok"] = false;
      out["kind"] = kind_name(e.kind());
      out["error"] = e.what();
    } catch (const std::exception& e) {
      out["ok"] = false;
      out["kind"] = "internal";
      out["error"] = e.what();
    }
    std::cout << out.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << '\n';
    std::cout.flush();
  }
  return 0;
}
