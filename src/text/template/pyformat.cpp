#include "pyformat.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "interpreter.h"
#include "template_error.h"
#include "unicode.h"

namespace tf::jinja {

namespace {

struct Spec {
  char32_t fill = ' ';
  char align = 0;  // < > ^ =
  char sign = 0;   // + - space
  bool alt = false;
  bool zero = false;
  long width = -1;
  char grouping = 0;  // , _
  long precision = -1;
  char type = 0;
};

Spec parse_spec(std::string_view s, std::size_t max_width) {
  Spec sp;
  std::u32string u = uni::to_u32(s);
  std::size_t i = 0;
  auto is_align = [](char32_t c) { return c == '<' || c == '>' || c == '^' || c == '='; };
  if (u.size() >= 2 && is_align(u[1])) {
    sp.fill = u[0];
    sp.align = static_cast<char>(u[1]);
    i = 2;
  } else if (!u.empty() && is_align(u[0])) {
    sp.align = static_cast<char>(u[0]);
    i = 1;
  }
  if (i < u.size() && (u[i] == '+' || u[i] == '-' || u[i] == ' ')) sp.sign = static_cast<char>(u[i++]);
  if (i < u.size() && u[i] == 'z') ++i;
  if (i < u.size() && u[i] == '#') {
    sp.alt = true;
    ++i;
  }
  if (i < u.size() && u[i] == '0') {
    sp.zero = true;
    ++i;
  }
  auto number = [&](long& out) {
    long v = 0;
    bool any = false;
    while (i < u.size() && u[i] >= '0' && u[i] <= '9') {
      v = v * 10 + static_cast<long>(u[i] - '0');
      if (v > 100000000) throw TemplateError(TemplateError::Kind::Limit, "format width too large");
      ++i;
      any = true;
    }
    if (any) out = v;
    return any;
  };
  number(sp.width);
  if (sp.width > 0 && static_cast<std::size_t>(sp.width) > max_width)
    throw TemplateError(TemplateError::Kind::Limit, "format width exceeds the size limit");
  if (i < u.size() && (u[i] == ',' || u[i] == '_')) sp.grouping = static_cast<char>(u[i++]);
  if (i < u.size() && u[i] == '.') {
    ++i;
    if (!number(sp.precision)) value_error("Format specifier missing precision");
  }
  if (i < u.size()) sp.type = static_cast<char>(u[i++]);
  if (i < u.size()) value_error("Invalid format specifier");
  return sp;
}

std::string pad(const std::string& body, const Spec& sp, char default_align, const std::string& sign_prefix = "") {
  const std::size_t len = uni::length(body) + uni::length(sign_prefix);
  std::string fill;
  uni::append(fill, sp.fill);
  if (sp.width < 0 || static_cast<std::size_t>(sp.width) <= len) return sign_prefix + body;
  const std::size_t n = static_cast<std::size_t>(sp.width) - len;
  char align = sp.align ? sp.align : default_align;
  std::string out;
  auto fills = [&](std::size_t k) {
    for (std::size_t j = 0; j < k; ++j) out += fill;
  };
  if (align == '<') {
    out = sign_prefix + body;
    fills(n);
  } else if (align == '>') {
    fills(n);
    out += sign_prefix + body;
  } else if (align == '^') {
    fills(n / 2);
    out += sign_prefix + body;
    fills(n - n / 2);
  } else {  // '='
    out = sign_prefix;
    fills(n);
    out += body;
  }
  return out;
}

std::string group_digits(const std::string& digits, char sep, int every) {
  std::string out;
  const std::size_t n = digits.size();
  for (std::size_t i = 0; i < n; ++i) {
    out.push_back(digits[i]);
    const std::size_t left = n - i - 1;
    if (left && left % static_cast<std::size_t>(every) == 0) out.push_back(sep);
  }
  return out;
}

std::string format_int(std::int64_t v, const Spec& sp) {
  const bool neg = v < 0;
  const unsigned long long mag = neg ? 0ULL - static_cast<unsigned long long>(v) : static_cast<unsigned long long>(v);
  std::string digits;
  std::string prefix;
  char t = sp.type ? sp.type : 'd';
  if (t == 'n') t = 'd';
  if (t == 'c') {
    if (v < 0 || v > 0x10FFFF)
      throw TemplateError(TemplateError::Kind::Runtime, "OverflowError: %c arg not in range(0x110000)");
    std::string s;
    uni::append(s, static_cast<char32_t>(v));
    return pad(s, sp, '<');
  }
  int base = 10;
  if (t == 'x' || t == 'X') base = 16;
  else if (t == 'o') base = 8;
  else if (t == 'b') base = 2;
  else if (t != 'd') value_error(std::string("Unknown format code '") + t + "' for object of type 'int'");
  const char* dig = t == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
  unsigned long long m = mag;
  do {
    digits.insert(digits.begin(), dig[m % static_cast<unsigned>(base)]);
    m /= static_cast<unsigned>(base);
  } while (m);
  if (sp.alt && base != 10) prefix = base == 16 ? (t == 'X' ? "0X" : "0x") : base == 8 ? "0o" : "0b";
  if (sp.grouping) digits = group_digits(digits, sp.grouping, base == 10 ? 3 : 4);
  std::string sign = neg ? "-" : sp.sign == '+' ? "+" : sp.sign == ' ' ? " " : "";
  Spec s2 = sp;
  if (sp.zero && !sp.align) {
    s2.fill = '0';
    s2.align = '=';
  }
  return pad(digits, s2, '>', sign + prefix);
}

std::string format_float(double v, const Spec& sp) {
  char t = sp.type;
  bool add_dot_0 = false;
  long prec = sp.precision;
  if (t == 0) {
    if (prec < 0) {
      std::string r = float_repr(std::fabs(v));
      std::string sign = std::signbit(v) && !std::isnan(v) ? "-" : sp.sign == '+' ? "+" : sp.sign == ' ' ? " " : "";
      Spec s2 = sp;
      if (sp.zero && !sp.align) {
        s2.fill = '0';
        s2.align = '=';
      }
      return pad(r, s2, '>', sign);
    }
    t = 'g';
    add_dot_0 = true;
  }
  if (t == 'n') t = 'g';
  if (prec < 0) prec = 6;
  double x = v;
  bool percent = false;
  if (t == '%') {
    x *= 100;
    t = 'f';
    percent = true;
  }
  if (t != 'e' && t != 'E' && t != 'f' && t != 'F' && t != 'g' && t != 'G')
    value_error(std::string("Unknown format code '") + t + "' for object of type 'float'");
  if (prec > 1000) throw TemplateError(TemplateError::Kind::Limit, "format precision too large");
  const bool neg = std::signbit(x) && !std::isnan(x);
  const double a = std::fabs(x);
  std::string body;
  if (std::isinf(a) || std::isnan(a)) {
    body = std::isnan(a) ? "nan" : "inf";
    if (t == 'E' || t == 'F' || t == 'G') body = std::isnan(a) ? "NAN" : "INF";
  } else {
    char fmt[16];
    std::snprintf(fmt, sizeof fmt, "%%%s.*%c", sp.alt ? "#" : "", t);
    const int n = std::snprintf(nullptr, 0, fmt, static_cast<int>(prec), a);
    std::vector<char> buf(static_cast<std::size_t>(n) + 1);
    std::snprintf(buf.data(), buf.size(), fmt, static_cast<int>(prec), a);
    body = buf.data();
    if (add_dot_0 && body.find_first_of(".eE") == std::string::npos) body += ".0";
  }
  if (sp.grouping && !std::isinf(a) && !std::isnan(a)) {
    std::size_t end = body.find_first_not_of("0123456789");
    if (end == std::string::npos) end = body.size();
    body = group_digits(body.substr(0, end), sp.grouping, 3) + body.substr(end);
  }
  if (percent) body += "%";
  std::string sign = neg ? "-" : sp.sign == '+' ? "+" : sp.sign == ' ' ? " " : "";
  Spec s2 = sp;
  if (sp.zero && !sp.align) {
    s2.fill = '0';
    s2.align = '=';
  }
  return pad(body, s2, '>', sign);
}

std::string format_value_unchecked(const Value& v, std::string_view spec, std::size_t max_width);

}  // namespace

std::string format_value(Interpreter& in, const Value& v, std::string_view spec) {
  std::string r = format_value_unchecked(v, spec, in.limits().max_output_bytes);
  in.check_size(r.size());
  return r;
}

namespace {
std::string format_value_unchecked(const Value& v, std::string_view spec, std::size_t max_width) {
  if (v.is_bool() && spec.empty()) return v.as_bool() ? "True" : "False";
  if (v.is_integral()) {
    const Spec sp = parse_spec(spec, max_width);
    if (sp.type == 'e' || sp.type == 'E' || sp.type == 'f' || sp.type == 'F' || sp.type == 'g' || sp.type == 'G' || sp.type == '%')
      return format_float(static_cast<double>(v.as_int()), sp);
    if (sp.precision >= 0) value_error("Precision not allowed in integer format specifier");
    return format_int(v.as_int(), sp);
  }
  if (v.is_float()) return format_float(v.as_float(), parse_spec(spec, max_width));
  if (v.is_str()) {
    const Spec sp = parse_spec(spec, max_width);
    if (sp.type && sp.type != 's') value_error(std::string("Unknown format code '") + sp.type + "' for object of type 'str'");
    if (sp.sign) value_error("Sign not allowed in string format specifier");
    if (sp.align == '=') value_error("'=' alignment not allowed in string format specifier");
    std::string s = v.str();
    if (sp.precision >= 0) s = s.substr(0, uni::byte_offset(s, static_cast<std::size_t>(sp.precision)));
    return pad(s, sp, '<');
  }
  if (!spec.empty()) type_error("unsupported format string passed to " + python_type_name(v) + ".__format__");
  return py_str(v);
}
}  // namespace

std::string str_format(Interpreter& in, std::string_view fmt, const CallArgs& args) {
  std::string out;
  std::size_t auto_index = 0;
  int mode = 0;  // 1 auto, 2 manual
  std::size_t i = 0;
  auto field_value = [&](std::string_view field) -> Value {
    // first part: index or name; then .attr / [key]
    std::size_t j = 0;
    while (j < field.size() && field[j] != '.' && field[j] != '[') ++j;
    const std::string_view first = field.substr(0, j);
    Value obj;
    if (first.empty()) {
      if (mode == 2) value_error("cannot switch from manual field specification to automatic field numbering");
      mode = 1;
      if (auto_index >= args.pos.size()) throw TemplateError(TemplateError::Kind::Runtime, "IndexError: Replacement index " + std::to_string(auto_index) + " out of range for positional args tuple");
      obj = args.pos[auto_index++];
    } else if (first.find_first_not_of("0123456789") == std::string_view::npos) {
      if (mode == 1) value_error("cannot switch from automatic field numbering to manual field specification");
      mode = 2;
      const std::size_t k = std::strtoul(std::string(first).c_str(), nullptr, 10);
      if (k >= args.pos.size()) throw TemplateError(TemplateError::Kind::Runtime, "IndexError: Replacement index " + std::string(first) + " out of range for positional args tuple");
      obj = args.pos[k];
    } else {
      const Value* v = args.find_kw(first);
      if (!v) throw TemplateError(TemplateError::Kind::Runtime, "KeyError: '" + std::string(first) + "'");
      obj = *v;
    }
    while (j < field.size()) {
      if (field[j] == '.') {
        std::size_t k = j + 1;
        while (k < field.size() && field[k] != '.' && field[k] != '[') ++k;
        obj = in.getattr(obj, field.substr(j + 1, k - j - 1));
        j = k;
      } else {
        const std::size_t k = field.find(']', j);
        if (k == std::string_view::npos) value_error("Missing ']' in format string");
        const std::string_view key = field.substr(j + 1, k - j - 1);
        if (!key.empty() && key.find_first_not_of("0123456789") == std::string_view::npos)
          obj = in.getitem(obj, Value(static_cast<std::int64_t>(std::strtoll(std::string(key).c_str(), nullptr, 10))));
        else
          obj = in.getitem(obj, Value(std::string(key)));
        j = k + 1;
        if (j < field.size() && field[j] != '.' && field[j] != '[') value_error("Only '.' or '[' may follow ']' in format field specifier");
      }
    }
    return obj;
  };
  while (i < fmt.size()) {
    const char c = fmt[i];
    if (c == '{') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
        out.push_back('{');
        i += 2;
        continue;
      }
      // find the matching close brace (nested braces in the spec allowed once)
      std::size_t j = i + 1;
      int depth = 1;
      while (j < fmt.size() && depth) {
        if (fmt[j] == '{') ++depth;
        else if (fmt[j] == '}') --depth;
        if (depth) ++j;
      }
      if (j >= fmt.size()) value_error("expected '}' before end of string");
      std::string_view inner = fmt.substr(i + 1, j - i - 1);
      std::string_view field = inner, spec;
      char conv = 0;
      std::size_t colon = std::string_view::npos, bang = std::string_view::npos;
      for (std::size_t k = 0, br = 0; k < inner.size(); ++k) {
        if (inner[k] == '[') br = 1;
        else if (inner[k] == ']') br = 0;
        else if (!br && inner[k] == '!' && bang == std::string_view::npos && colon == std::string_view::npos) bang = k;
        else if (!br && inner[k] == ':') {
          colon = k;
          break;
        }
      }
      if (colon != std::string_view::npos) {
        spec = inner.substr(colon + 1);
        field = inner.substr(0, colon);
      }
      if (bang != std::string_view::npos) {
        if (bang + 2 != field.size()) value_error("expected ':' after conversion specifier");
        conv = field[bang + 1];
        field = field.substr(0, bang);
      }
      Value v = field_value(field);
      if (conv == 'r' || conv == 'a') v = Value(py_repr(v));
      else if (conv == 's') v = Value(py_str(v));
      else if (conv) value_error(std::string("Unknown conversion specifier ") + conv);
      std::string spec_s(spec);
      if (spec_s.find('{') != std::string::npos) spec_s = str_format(in, spec_s, args);
      out += format_value(in, v, spec_s);
      in.check_size(out.size());
      i = j + 1;
      continue;
    }
    if (c == '}') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '}') {
        out.push_back('}');
        i += 2;
        continue;
      }
      value_error("Single '}' encountered in format string");
    }
    out.push_back(c);
    ++i;
  }
  in.charge(out.size() / 16);
  return out;
}

std::string percent_format(Interpreter& in, const Value& fmt_value, const Value& args) {
  const std::string& fmt = fmt_value.str();
  const bool markup = fmt_value.is_markup();
  std::vector<Value> items;
  // CPython: a non-tuple argument with __getitem__ (dict, list, range, Undefined) is the "mapping" that
  // %(key)s reads, and then unconsumed arguments are not an error.
  const bool mapping_like = !args.is_tuple() && !args.is_str() &&
                            (args.is_dict() || args.is_undefined() ||
                             (args.is_list() && (args.list_kind() == ListKind::List || args.list_kind() == ListKind::Range)));
  const Value* mapping = mapping_like ? &args : nullptr;
  if (args.is_tuple()) {
    items = args.items();
  } else {
    items.push_back(args);
  }
  std::size_t next = 0;
  std::string out;
  auto escape_if = [&](const Value& v) -> Value {
    if (markup && !v.is_markup() && (v.is_str() || !v.is_number())) return Value(html_escape(py_str(v)), true);
    return v;
  };
  for (std::size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      out.push_back(fmt[i]);
      continue;
    }
    if (++i >= fmt.size()) value_error("incomplete format");
    Value arg;
    bool have_arg = false;
    if (fmt[i] == '(') {
      if (!mapping) type_error("format requires a mapping");
      const std::size_t close = fmt.find(')', i);
      if (close == std::string::npos) value_error("incomplete format key");
      const std::string key = fmt.substr(i + 1, close - i - 1);
      if (mapping->is_undefined()) raise_undefined(*mapping);
      if (!mapping->is_dict()) type_error("list indices must be integers or slices, not str");
      const Value* v = mapping->dict().find(std::string_view(key));
      if (!v) throw TemplateError(TemplateError::Kind::Runtime, "KeyError: '" + key + "'");
      arg = *v;
      have_arg = true;
      i = close + 1;
    }
    Spec sp;
    for (; i < fmt.size(); ++i) {
      const char f = fmt[i];
      if (f == '-') sp.align = '<';
      else if (f == '+') sp.sign = '+';
      else if (f == ' ') { if (!sp.sign) sp.sign = ' '; }
      else if (f == '#') sp.alt = true;
      else if (f == '0') sp.zero = true;
      else break;
    }
    auto take = [&]() -> Value {
      if (next >= items.size())
        type_error("not enough arguments for format string");
      return items[next++];
    };
    auto number = [&](long& outv) {
      if (i < fmt.size() && fmt[i] == '*') {
        const Value w = take();
        if (!w.is_integral()) type_error("* wants int");
        if (w.as_int() > 100000000 || w.as_int() < -100000000) throw TemplateError(TemplateError::Kind::Limit, "format width too large");
        outv = static_cast<long>(w.as_int());
        ++i;
        return;
      }
      long v = 0;
      bool any = false;
      while (i < fmt.size() && fmt[i] >= '0' && fmt[i] <= '9') {
        v = v * 10 + (fmt[i] - '0');
        if (v > 100000000) throw TemplateError(TemplateError::Kind::Limit, "format width too large");
        ++i;
        any = true;
      }
      if (any) outv = v;
    };
    number(sp.width);
    if (sp.width < -1) {
      sp.align = '<';
      sp.width = -sp.width;
    }
    if (sp.width > 0) in.check_size(static_cast<std::size_t>(sp.width));
    if (i < fmt.size() && fmt[i] == '.') {
      ++i;
      sp.precision = 0;
      number(sp.precision);
    }
    while (i < fmt.size() && (fmt[i] == 'h' || fmt[i] == 'l' || fmt[i] == 'L')) ++i;
    if (i >= fmt.size()) value_error("incomplete format");
    const char t = fmt[i];
    if (t == '%') {
      out.push_back('%');
      continue;
    }
    if (!have_arg) arg = take();
    std::string piece;
    if (t == 's' || t == 'r' || t == 'a') {
      const Value e = escape_if(arg);
      std::string s = t == 's' ? py_str(e) : py_repr(arg);
      if (t != 's' && markup) s = html_escape(s);
      if (sp.precision >= 0) s = s.substr(0, uni::byte_offset(s, static_cast<std::size_t>(sp.precision)));
      Spec s2;
      s2.width = sp.width;
      s2.align = sp.align == '<' ? '<' : '>';
      piece = pad(s, s2, '>');
    } else if (t == 'd' || t == 'i' || t == 'u' || t == 'x' || t == 'X' || t == 'o') {
      std::int64_t v;
      if (arg.is_integral()) v = arg.as_int();
      else if (arg.is_float() && (t == 'd' || t == 'i' || t == 'u')) {
        v = float_to_int(arg.as_float());
      } else {
        type_error(std::string("%") + t + " format: " + (t == 'x' || t == 'X' || t == 'o' ? "an integer" : "a real number") + " is required, not " + python_type_name(arg));
      }
      Spec s2 = sp;
      s2.type = (t == 'i' || t == 'u') ? 'd' : t;
      if (sp.precision >= 0) s2.precision = -1;
      if (sp.align == '<') s2.zero = false;
      piece = format_int(v, s2);
    } else if (t == 'e' || t == 'E' || t == 'f' || t == 'F' || t == 'g' || t == 'G') {
      if (!arg.is_number()) type_error("must be real number, not " + python_type_name(arg));
      Spec s2 = sp;
      s2.type = t;
      if (s2.precision < 0) s2.precision = 6;
      if (sp.align == '<') s2.zero = false;
      piece = format_float(arg.as_float(), s2);
    } else if (t == 'c') {
      std::string s;
      if (arg.is_integral()) {
        if (arg.as_int() < 0 || arg.as_int() > 0x10FFFF)
          throw TemplateError(TemplateError::Kind::Runtime, "OverflowError: %c arg not in range(0x110000)");
        uni::append(s, static_cast<char32_t>(arg.as_int()));
      }
      else if (arg.is_str() && uni::length(arg.str()) == 1) s = arg.str();
      else type_error("%c requires int or char");
      Spec s2;
      s2.width = sp.width;
      s2.align = sp.align == '<' ? '<' : '>';
      piece = pad(s, s2, '>');
    } else {
      value_error(std::string("unsupported format character '") + t + "'");
    }
    out += piece;
    in.check_size(out.size());
  }
  if (!mapping && next < items.size()) type_error("not all arguments converted during string formatting");
  in.charge(out.size() / 16);
  return out;
}

std::optional<std::int64_t> parse_py_int(std::string_view s, int base) {
  std::u32string u = uni::to_u32(s);
  std::size_t i = 0, n = u.size();
  while (i < n && uni::is_space(u[i])) ++i;
  while (n > i && uni::is_space(u[n - 1])) --n;
  bool neg = false;
  if (i < n && (u[i] == '+' || u[i] == '-')) neg = u[i++] == '-';
  if (base == 0 || base == 16 || base == 8 || base == 2) {
    if (i + 1 < n && u[i] == '0') {
      const char32_t p = u[i + 1] | 0x20;
      const int pb = p == 'x' ? 16 : p == 'o' ? 8 : p == 'b' ? 2 : 0;
      if (pb && (base == 0 || base == pb)) {
        base = pb;
        i += 2;
        if (i < n && u[i] == '_') ++i;
      }
    }
    if (base == 0) {
      base = 10;
      // "0" followed by more zeros is allowed; other leading zeros are not in base 0
      if (i < n && u[i] == '0') {
        for (std::size_t k = i; k < n; ++k)
          if (u[k] != '0' && u[k] != '_') return std::nullopt;
      }
    }
  }
  if (base < 2 || base > 36) return std::nullopt;
  if (i >= n) return std::nullopt;
  u128 v = 0;
  bool prev_digit = false;
  for (; i < n; ++i) {
    const char32_t c = u[i];
    if (c == '_') {
      if (!prev_digit || i + 1 >= n) return std::nullopt;
      prev_digit = false;
      continue;
    }
    int d;
    const int dec = uni::decimal_value(c);
    if (dec >= 0) d = dec;
    else if (c >= 'a' && c <= 'z') d = static_cast<int>(c - 'a') + 10;
    else if (c >= 'A' && c <= 'Z') d = static_cast<int>(c - 'A') + 10;
    else return std::nullopt;
    if (d >= base) return std::nullopt;
    v = v * static_cast<unsigned>(base) + static_cast<unsigned>(d);
    if (v > (static_cast<u128>(1) << 63))
      throw TemplateError(TemplateError::Kind::Runtime, "OverflowError: integer too large for this implementation (64-bit)");
    prev_digit = true;
  }
  if (!prev_digit) return std::nullopt;
  if (!neg && v > static_cast<u128>(INT64_MAX))
    throw TemplateError(TemplateError::Kind::Runtime, "OverflowError: integer too large for this implementation (64-bit)");
  return neg ? static_cast<std::int64_t>(-static_cast<i128>(v)) : static_cast<std::int64_t>(v);
}

std::optional<double> parse_py_float(std::string_view s) {
  std::u32string u = uni::to_u32(s);
  std::size_t i = 0, n = u.size();
  while (i < n && uni::is_space(u[i])) ++i;
  while (n > i && uni::is_space(u[n - 1])) --n;
  std::string a;
  for (std::size_t k = i; k < n; ++k) {
    const int d = uni::decimal_value(u[k]);
    if (d >= 0) a.push_back(static_cast<char>('0' + d));
    else if (u[k] < 0x80) a.push_back(static_cast<char>(u[k]));
    else return std::nullopt;
  }
  std::string t = a;
  std::size_t p = 0;
  bool neg = false;
  if (p < t.size() && (t[p] == '+' || t[p] == '-')) neg = t[p++] == '-';
  std::string rest = t.substr(p);
  std::string lower;
  for (char c : rest) lower.push_back(static_cast<char>(c | 0x20));
  if (lower == "inf" || lower == "infinity") return neg ? -INFINITY : INFINITY;
  if (lower == "nan") return neg ? -NAN : NAN;
  // digits with single underscores between digits; optional fraction and exponent
  std::string clean;
  std::size_t k = 0;
  auto digits = [&](bool required) {
    bool any = false;
    while (k < rest.size()) {
      if (rest[k] >= '0' && rest[k] <= '9') {
        clean.push_back(rest[k++]);
        any = true;
      } else if (rest[k] == '_' && any && k + 1 < rest.size() && rest[k + 1] >= '0' && rest[k + 1] <= '9') {
        ++k;
      } else {
        break;
      }
    }
    return any || !required;
  };
  const bool int_part = digits(false);
  bool frac_part = false;
  if (k < rest.size() && rest[k] == '.') {
    clean.push_back('.');
    ++k;
    const std::size_t before = clean.size();
    digits(false);
    frac_part = clean.size() > before;
  }
  if (!int_part && !frac_part) return std::nullopt;
  if (k < rest.size() && (rest[k] == 'e' || rest[k] == 'E')) {
    clean.push_back('e');
    ++k;
    if (k < rest.size() && (rest[k] == '+' || rest[k] == '-')) clean.push_back(rest[k++]);
    if (!digits(true)) return std::nullopt;
  }
  if (k != rest.size()) return std::nullopt;
  errno = 0;
  const double v = std::strtod(clean.c_str(), nullptr);
  return neg ? -v : v;
}

}  // namespace tf::jinja
