#pragma once
// Helpers of the chat-template unit tests.
#include <gtest/gtest.h>

#include <string>

#include "text/template/chat_template.h"

namespace tf::test {

inline std::string render(const std::string& src, const nlohmann::ordered_json& vars = nlohmann::ordered_json::object(),
                          const RenderOptions& opts = {}) {
  return JinjaTemplate::compile(src).render(vars, opts);
}

// The error a template raises (compile or render); fails the test when it renders.
inline TemplateError render_error(const std::string& src, const nlohmann::ordered_json& vars = nlohmann::ordered_json::object(),
                                  const RenderOptions& opts = {}) {
  try {
    const std::string out = render(src, vars, opts);
    ADD_FAILURE() << "expected an error from " << src << ", got: " << out;
  } catch (const TemplateError& e) {
    return e;
  }
  return TemplateError(TemplateError::Kind::Input, "none");
}

}  // namespace tf::test
