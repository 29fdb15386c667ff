#pragma once
// Python's notions of a value's kind as jinja2's builtins test them (tests.cpp defines them; the filters
// use them too).
#include "value.h"

namespace tf::jinja {

bool is_sequence(const Value& v);  // jinja2 `is sequence`: has len() and item access
bool is_iterable(const Value& v);  // jinja2 `is iterable`
bool is_callable(const Value& v);  // jinja2 `is callable`

}  // namespace tf::jinja
