#pragma once
#include <stdexcept>
#include <string>

namespace tf {

// Every way a chat template can fail: it does not parse, it raises while rendering (an undefined value
// used, a type error, raise_exception(), a sandbox violation), or it exceeds a resource limit. The message
// is one line meant for the client (an HTTP 4xx body, or the CLI's stderr with exit code 1).
class TemplateError : public std::runtime_error {
 public:
  enum class Kind {
    Syntax,     // does not parse/compile (jinja2 TemplateSyntaxError / TemplateAssertionError)
    Runtime,    // raised while rendering (UndefinedError, TypeError, SecurityError, ...)
    Raised,     // the template called raise_exception(message)
    Limit,      // output size, work or recursion limit exceeded
    Input,      // the render inputs are unusable (e.g. messages is not a list)
  };
  TemplateError(Kind kind, const std::string& message, int line = 0)
      : std::runtime_error(line > 0 ? message + " (line " + std::to_string(line) + ")" : message),
        kind_(kind),
        line_(line),
        bare_(message) {}
  Kind kind() const { return kind_; }
  int line() const { return line_; }             // template line, 0 when unknown
  const std::string& bare_message() const { return bare_; }  // what() without the line suffix

 private:
  Kind kind_;
  int line_;
  std::string bare_;
};

}  // namespace tf
