#include "text/template/py_json.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "text/template/unicode.h"
#include "text/template/value.h"

namespace tf {

void append_py_json_string(std::string& out, std::string_view s, bool ensure_ascii) {
  out.push_back('"');
  char buf[16];
  for (std::size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b < 0x80) {
      ++i;
      switch (b) {
        case '"':
          out += "\\\"";
          break;
        case '\\':
          out += "\\\\";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        case '\b':
          out += "\\b";
          break;
        case '\f':
          out += "\\f";
          break;
        default:
          if (b < 0x20 || (ensure_ascii && b == 0x7F)) {
            std::snprintf(buf, sizeof buf, "\\u%04x", b);
            out += buf;
          } else {
            out.push_back(static_cast<char>(b));
          }
      }
      continue;
    }
    const std::size_t start = i;
    const char32_t c = jinja::uni::decode(s, i);
    if (!ensure_ascii) {
      out.append(s.substr(start, i - start));
    } else if (c < 0x10000) {
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      out += buf;
    } else {
      const char32_t v = c - 0x10000;
      std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", static_cast<unsigned>(0xD800 + (v >> 10)),
                    static_cast<unsigned>(0xDC00 + (v & 0x3FF)));
      out += buf;
    }
  }
  out.push_back('"');
}

namespace {

void dump(std::string& out, const nlohmann::ordered_json& v) {
  using J = nlohmann::ordered_json;
  switch (v.type()) {
    case J::value_t::null:
      out += "null";
      return;
    case J::value_t::boolean:
      out += v.get<bool>() ? "true" : "false";
      return;
    case J::value_t::number_integer:
      out += std::to_string(v.get<std::int64_t>());
      return;
    case J::value_t::number_unsigned:
      out += std::to_string(v.get<std::uint64_t>());
      return;
    case J::value_t::number_float: {
      const double d = v.get<double>();
      if (std::isnan(d))
        out += "NaN";
      else if (std::isinf(d))
        out += d > 0 ? "Infinity" : "-Infinity";
      else
        out += jinja::float_repr(d);
      return;
    }
    case J::value_t::string:
      append_py_json_string(out, v.get_ref<const std::string&>(), false);
      return;
    case J::value_t::array: {
      out.push_back('[');
      bool first = true;
      for (const auto& e : v) {
        if (!first) out += ", ";
        first = false;
        dump(out, e);
      }
      out.push_back(']');
      return;
    }
    case J::value_t::object: {
      out.push_back('{');
      bool first = true;
      for (const auto& [k, e] : v.items()) {
        if (!first) out += ", ";
        first = false;
        append_py_json_string(out, k, false);
        out += ": ";
        dump(out, e);
      }
      out.push_back('}');
      return;
    }
    default:
      throw std::invalid_argument("a value JSON cannot hold");
  }
}

// nlohmann's DOM builder, told apart where Python reads a number differently: an integer literal too large for
// 64 bits arrives as a float with its raw text (Python keeps the exact integer).
class ExactNumbers : public nlohmann::detail::json_sax_dom_parser<nlohmann::ordered_json> {
 public:
  using json_sax_dom_parser::json_sax_dom_parser;
  bool number_float(double value, const std::string& raw) {
    if (raw.find_first_of(".eE") == std::string::npos) throw std::invalid_argument("an integer past 64 bits");
    return json_sax_dom_parser::number_float(value, raw);
  }
};

// Python's json.loads also reads NaN, Infinity and -Infinity outside strings.
bool has_python_constant(std::string_view text) {
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (text.substr(i, 3) == "NaN" || text.substr(i, 8) == "Infinity") {
      return true;
    }
  }
  return false;
}

}  // namespace

std::string py_json_dumps(const nlohmann::ordered_json& value) {
  std::string out;
  dump(out, value);
  return out;
}

std::optional<nlohmann::ordered_json> py_json_loads(std::string_view text) {
  nlohmann::ordered_json result;
  ExactNumbers sax(result, /*allow_exceptions=*/false);
  const bool ok = nlohmann::ordered_json::sax_parse(text, &sax, nlohmann::detail::input_format_t::json,
                                                    /*strict=*/true, /*ignore_comments=*/false);
  if (ok && !result.is_discarded()) return result;
  if (has_python_constant(text)) throw std::invalid_argument("NaN or Infinity (not standard JSON)");
  return std::nullopt;
}

}  // namespace tf
