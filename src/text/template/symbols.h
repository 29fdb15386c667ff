#pragma once
#include "ast.h"

namespace tf::jinja {

// jinja2's compile step for the parsed template: resolves every variable reference to a frame slot with
// the same scoping rules as jinja2's code generator (idtracking.py), fills each frame's load
// instructions, and raises the compile-time errors jinja2 raises (unknown filter or test outside an
// if/conditional expression, break/continue outside a loop, assigning to `loop`, ...).
void resolve_symbols(TemplateAst& ast);

// Builtin filter and test names (filters.cpp, tests.cpp).
bool is_known_filter(std::string_view name);
bool is_known_test(std::string_view name);

}  // namespace tf::jinja
