#include "server/json_fields.h"

#include <fmt/format.h>

#include <cmath>
#include <vector>

#include "server/api_error.h"

namespace tf::server {

namespace {

// Deepest nesting of arrays/objects in JSON text, counting brackets outside strings. Malformed text is left
// to the parser; this only bounds the depth any later recursion can see.
int nesting_depth(std::string_view text, int stop_above) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '[' || c == '{') {
      if (++depth > deepest) deepest = depth;
      if (deepest > stop_above) return deepest;
    } else if (c == ']' || c == '}') --depth;
  }
  return deepest;
}

// Reads `body` with nlohmann's SAX interface, keeping the path to the value being read; at the parse error
// that path ("messages[0].content") is where the body broke. Empty when the error is outside any field.
class PathAtError final : public nlohmann::json_sax<nlohmann::ordered_json> {
 public:
  std::string path() const {
    std::string p;
    for (const auto& l : levels_) {
      if (l.array)
        p += fmt::format("[{}]", l.index);
      else if (l.has_key)
        p += (p.empty() ? "" : ".") + l.key;
    }
    return p;
  }
  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool string(string_t&) override { return value(); }
  bool binary(binary_t&) override { return value(); }
  bool start_object(std::size_t) override {
    levels_.push_back(Level());
    return true;
  }
  bool key(string_t& k) override {
    levels_.back().key = k;
    levels_.back().has_key = true;
    return true;
  }
  bool end_object() override {
    levels_.pop_back();
    return value();
  }
  bool start_array(std::size_t) override {
    Level array;
    array.array = true;
    levels_.push_back(std::move(array));
    return true;
  }
  bool end_array() override {
    levels_.pop_back();
    return value();
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

 private:
  struct Level {
    bool array = false;
    std::size_t index = 0;
    bool has_key = false;
    std::string key;
  };
  // A value was read: the next one in an array has the next index; an object's next needs its key.
  bool value() {
    if (!levels_.empty()) {
      if (levels_.back().array)
        ++levels_.back().index;
      else
        levels_.back().has_key = false;
    }
    return true;
  }
  std::vector<Level> levels_;
};

std::string path_of_parse_error(std::string_view body) {
  PathAtError sax;
  try {
    nlohmann::ordered_json::sax_parse(body.begin(), body.end(), &sax);
  } catch (const nlohmann::ordered_json::exception&) {
  }
  return sax.path();
}

std::string show(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{}", static_cast<long long>(v));
  return fmt::format("{}", v);
}

}  // namespace

nlohmann::ordered_json parse_json_body(std::string_view body, int max_depth) {
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos)
    throw invalid_request("The request body is empty; send a JSON object.");
  if (nesting_depth(body, max_depth) > max_depth)
    throw invalid_request(fmt::format("The request body nests JSON deeper than {} levels.", max_depth));
  nlohmann::ordered_json j;
  try {
    j = nlohmann::ordered_json::parse(body.begin(), body.end());
  } catch (const nlohmann::ordered_json::exception& e) {
    // Name the field whose value broke (a lone surrogate in a string, a number like 1e999 that overflows).
    const auto path = path_of_parse_error(body);
    if (!path.empty())
      throw invalid_request(fmt::format("We could not parse the JSON body of your request: the value of '{}' is "
                                        "not valid JSON: {}",
                                        path, e.what()),
                            path);
    throw invalid_request(fmt::format("We could not parse the JSON body of your request: {}", e.what()));
  }
  if (!j.is_object())
    throw invalid_request(fmt::format("The request body must be a JSON object, not {}.", json_type_name(j)));
  return j;
}

std::string dump_json(const nlohmann::ordered_json& j) {
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::string json_type_name(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return "null";
    case nlohmann::ordered_json::value_t::boolean: return "a boolean";
    case nlohmann::ordered_json::value_t::string: return "a string";
    case nlohmann::ordered_json::value_t::array: return "an array";
    case nlohmann::ordered_json::value_t::object: return "an object";
    case nlohmann::ordered_json::value_t::number_float: return "a decimal number";
    case nlohmann::ordered_json::value_t::number_integer:
    case nlohmann::ordered_json::value_t::number_unsigned: return "an integer";
    default: return "an unsupported value";
  }
}

JsonFields::JsonFields(const nlohmann::ordered_json& object, std::string prefix)
    : object_(object), prefix_(std::move(prefix)) {}

const nlohmann::ordered_json* JsonFields::get(std::string_view name) const {
  if (!object_.is_object()) return nullptr;
  auto it = object_.find(name);
  if (it == object_.end() || it->is_null()) return nullptr;
  return &*it;
}

void JsonFields::wrong_type(std::string_view name, const char* expected, const nlohmann::ordered_json& got) const {
  throw invalid_request(
      fmt::format("Invalid type for '{}': expected {}, but got {} instead.", param(name), expected,
                  json_type_name(got)),
      param(name), "invalid_type");
}

std::optional<double> JsonFields::number(std::string_view name, double min, double max) const {
  const auto* v = get(name);
  if (!v) return std::nullopt;
  if (!v->is_number()) wrong_type(name, "a number", *v);
  const double d = v->get<double>();
  if (!std::isfinite(d))
    throw invalid_request(fmt::format("Invalid '{}': the number must be finite.", param(name)), param(name),
                          "invalid_value");
  if (d < min || d > max)
    throw invalid_request(fmt::format("Invalid '{}': expected a value between {} and {}, but got {} instead.",
                                      param(name), show(min), show(max), show(d)),
                          param(name), "invalid_value");
  return d;
}

std::optional<std::int64_t> JsonFields::integer(std::string_view name, std::int64_t min, std::int64_t max) const {
  const auto* v = get(name);
  if (!v) return std::nullopt;
  std::int64_t i = 0;
  if (v->is_number_integer() && !v->is_number_unsigned()) {
    i = v->get<std::int64_t>();
  } else if (v->is_number_unsigned()) {
    const auto u = v->get<std::uint64_t>();
    i = u > static_cast<std::uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<std::int64_t>(u);
  } else if (v->is_number_float()) {
    const double d = v->get<double>();
    if (!std::isfinite(d) || d != std::floor(d) || std::fabs(d) > 9.0e18)
      throw invalid_request(
          fmt::format("Invalid '{}': expected an integer, but got {} instead.", param(name), v->dump()),
          param(name), "invalid_type");
    i = static_cast<std::int64_t>(d);
  } else {
    wrong_type(name, "an integer", *v);
  }
  if (i < min || i > max)
    throw invalid_request(fmt::format("Invalid '{}': expected a value between {} and {}, but got {} instead.",
                                      param(name), min, max, i),
                          param(name), "invalid_value");
  return i;
}

std::optional<std::uint64_t> JsonFields::bits64(std::string_view name) const {
  const auto* v = get(name);
  if (!v) return std::nullopt;
  if (v->is_number_unsigned()) return v->get<std::uint64_t>();
  if (v->is_number_integer()) return static_cast<std::uint64_t>(v->get<std::int64_t>());
  if (v->is_number_float()) {
    const double d = v->get<double>();
    if (std::isfinite(d) && d == std::floor(d) && d >= -9.2e18 && d < 1.8e19)
      return d < 0 ? static_cast<std::uint64_t>(static_cast<std::int64_t>(d)) : static_cast<std::uint64_t>(d);
    throw invalid_request(
        fmt::format("Invalid '{}': expected a 64-bit integer, but got {} instead.", param(name), v->dump()),
        param(name), "invalid_type");
  }
  wrong_type(name, "an integer", *v);
}

std::optional<bool> JsonFields::boolean(std::string_view name) const {
  const auto* v = get(name);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) wrong_type(name, "a boolean", *v);
  return v->get<bool>();
}

std::optional<std::string> JsonFields::string(std::string_view name) const {
  const auto* v = get(name);
  if (!v) return std::nullopt;
  if (!v->is_string()) wrong_type(name, "a string", *v);
  return v->get<std::string>();
}

const nlohmann::ordered_json* JsonFields::object(std::string_view name) const {
  const auto* v = get(name);
  if (v && !v->is_object()) wrong_type(name, "an object", *v);
  return v;
}

const nlohmann::ordered_json* JsonFields::array(std::string_view name) const {
  const auto* v = get(name);
  if (v && !v->is_array()) wrong_type(name, "an array", *v);
  return v;
}

void JsonFields::refuse_if_set(std::string_view name, const std::string& why) const {
  const auto* v = get(name);
  if (!v) return;
  const bool empty = (v->is_boolean() && !v->get<bool>()) ||
                     ((v->is_array() || v->is_object() || v->is_string()) && v->empty());
  if (!empty) throw unsupported(fmt::format("'{}' is not supported by this server: {}", param(name), why), param(name));
}

}  // namespace tf::server
