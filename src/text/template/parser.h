#pragma once
#include <string_view>

#include "ast.h"

namespace tf::jinja {

// Parses template source into an AST (jinja2's grammar, with the loopcontrols extension's break/continue
// and transformers' {% generation %} tag). Throws TemplateError(Syntax).
TemplateAst parse_template(std::string_view source);

// Depth limits of the parser: statement/expression nesting and expression tree height.
inline constexpr int kMaxParseNesting = 100;
inline constexpr int kMaxExprHeight = 200;

}  // namespace tf::jinja
