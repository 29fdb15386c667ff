#pragma once
#include "ast.h"

namespace tf::jinja {

// jinja2's compile-time constant folding, which is not always semantics-preserving: an expression of
// constants is evaluated once, and a slice of a constant non-sequence then yields an Undefined instead of
// raising. A {{ }} child folds whenever it evaluates; any other expression folds when its value has a
// "safe repr" (None, bool, numbers, str, range, and lists/tuples/dicts of those).
void fold_constants(TemplateAst& ast);

}  // namespace tf::jinja
