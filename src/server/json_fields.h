#pragma once
// Reading fields of a client's JSON with exact type rules: a boolean is never a number, numbers must be finite,
// integers must be integral, and null means "not given". Every failure is an ApiError (400) naming the field.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace tf::server {

// Parses a request body: a JSON object, nested at most `max_depth` deep (deeper bodies are refused before
// parsing, so no recursion depends on the client). Throws ApiError 400 otherwise.
nlohmann::ordered_json parse_json_body(std::string_view body, int max_depth = 64);

// Dumps JSON for the wire; invalid UTF-8 in strings becomes U+FFFD instead of throwing.
std::string dump_json(const nlohmann::ordered_json& j);

// A name for a JSON value's type in error messages ("a boolean", "a string", ...).
std::string json_type_name(const nlohmann::ordered_json& j);

class JsonFields {
 public:
  // `object` must be a JSON object and outlive this reader; `prefix` names it in errors ("stream_options.").
  explicit JsonFields(const nlohmann::ordered_json& object, std::string prefix = {});

  // The value, or nullptr when the field is absent or null.
  const nlohmann::ordered_json* get(std::string_view name) const;
  std::string param(std::string_view name) const { return prefix_ + std::string(name); }

  std::optional<double> number(std::string_view name, double min, double max) const;
  std::optional<std::int64_t> integer(std::string_view name, std::int64_t min, std::int64_t max) const;
  // Any 64-bit integer (negative values wrap, as a seed is only bits).
  std::optional<std::uint64_t> bits64(std::string_view name) const;
  std::optional<bool> boolean(std::string_view name) const;
  std::optional<std::string> string(std::string_view name) const;
  const nlohmann::ordered_json* object(std::string_view name) const;
  const nlohmann::ordered_json* array(std::string_view name) const;

  // Refuses a field that is present and not null, false or empty (numbers always count as set): for options
  // this server does not implement.
  void refuse_if_set(std::string_view name, const std::string& why) const;

 private:
  [[noreturn]] void wrong_type(std::string_view name, const char* expected, const nlohmann::ordered_json& got) const;
  const nlohmann::ordered_json& object_;
  std::string prefix_;
};

}  // namespace tf::server
