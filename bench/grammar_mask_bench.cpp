// The cost of structured output's token mask per generated token, on a model's vocabulary:
//   tf_grammar_mask_bench MODEL [REPEATS=3]
// For each schema below, a reply that fits it is tokenized, and the mask of every row of that reply is computed
// as the decode loop does (engine/grammar_constraint.h: the grammar state after the row's prefix, then the
// mask from the cache or from one walk of the vocabulary trie, then -inf into a vocabulary-sized row). A fresh
// constraint per repeat, so every repeat pays its walks; the median repeat is printed. Also printed: the
// one-time cost of the vocabulary's bytes and trie (per engine, on the first structured request).
// Results go to docs/benchmarks.md, beside the decode step of the same model (tf_model_speed_bench).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/grammar_constraint.h"
#include "text/grammar/json_schema.h"
#include "text/tokenizer/tokenizer.h"

namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

struct Case {
  const char* name;
  const char* schema;  // null: json_object
  const char* reply;
};

const Case kCases[] = {
    {"person", R"({"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
      "email": {"type": "string", "format": "email"}}, "required": ["name", "age"]})",
     R"({"name": "Alice Johnson", "age": 34, "email": "alice.johnson@example.com"})"},
    {"nested", R"({"type": "object", "properties": {"user": {"type": "object", "properties": {"id": {"type": "integer"},
      "tags": {"type": "array", "items": {"type": "string"}}}, "required": ["id", "tags"]},
      "active": {"type": "boolean"}}, "required": ["user", "active"]})",
     "{\n  \"user\": {\n    \"id\": 1024,\n    \"tags\": [\"admin\", \"editor\", \"early adopter\"]\n  },\n  \"active\": true\n}"},
    {"enum+numbers", R"({"type": "object", "properties": {"color": {"enum": ["red", "green", "blue"]},
      "price": {"type": "number", "minimum": 0}, "quantity": {"type": "integer", "minimum": 1, "maximum": 100}},
      "required": ["color", "price", "quantity"]})",
     R"({"color": "green", "price": 19.99, "quantity": 12})"},
    {"array of objects", R"({"type": "array", "items": {"type": "object", "properties": {"id": {"type": "integer"},
      "title": {"type": "string"}, "done": {"type": "boolean"}}, "required": ["id", "title", "done"]}})",
     R"([{"id": 1, "title": "Buy milk", "done": false}, {"id": 2, "title": "Write the report", "done": true}, {"id": 3, "title": "Call \"Bob\" back", "done": false}])"},
    {"anyOf+refs", R"({"$defs": {"point": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
      "required": ["x", "y"]}}, "type": "object", "properties": {"shape": {"anyOf": [{"const": "circle"},
      {"const": "polygon"}]}, "points": {"type": "array", "items": {"$ref": "#/$defs/point"}}}, "required": ["shape", "points"]})",
     R"({"shape": "polygon", "points": [{"x": 0, "y": 0}, {"x": 1.5, "y": 0}, {"x": 1.5, "y": 2.25}]})"},
    {"long text", R"({"type": "object", "properties": {"summary": {"type": "string"}}, "required": ["summary"]})",
     R"({"summary": "The meeting covered the quarterly results, which were better than expected in every region except the north, where supply problems delayed two large orders. The team agreed to review the logistics contract and to report back next month with a plan and a budget."})"},
    {"json_object", nullptr,
     R"({"animal": "cat", "traits": ["curious", "independent"], "age": 3, "indoor": true, "owner": null})"},
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: tf_grammar_mask_bench MODEL [REPEATS=3]\n");
    return 2;
  }
  const int repeats = argc > 2 ? std::max(1, std::atoi(argv[2])) : 3;
  const auto tokenizer = tf::load_tokenizer(argv[1]);
  auto t0 = std::chrono::steady_clock::now();
  const auto vocabulary = tf::token_vocabulary(tokenizer);
  const double setup = seconds_since(t0);
  std::printf("vocabulary %zu tokens, trie %zu nodes, built in %.0f ms (once per engine)\n", vocabulary->bytes.size(),
              vocabulary->byte.size(), setup * 1e3);
  const auto eos = tokenizer.eog_ids();
  std::vector<float> row(vocabulary->bytes.size());
  double all_time = 0;
  std::size_t all_tokens = 0;
  std::printf("%-18s %6s %6s %6s %10s %10s %10s\n", "schema", "tokens", "walks", "cached", "mean us", "p50 us",
              "max us");
  for (const auto& c : kCases) {
    const auto ids = tokenizer.encode(c.reply);
    std::vector<double> totals;
    std::vector<double> per_row;
    tf::GrammarMaskStats stats;
    for (int r = 0; r < repeats; ++r) {
      const auto g = c.schema ? tf::grammar::json_schema_grammar(nlohmann::ordered_json::parse(c.schema))
                              : tf::grammar::json_object_grammar();
      const auto constraint = tf::make_grammar_constraint(vocabulary, g, eos);
      std::vector<double> rows;
      double total = 0;
      for (std::size_t i = 0; i <= ids.size(); ++i) {
        std::fill(row.begin(), row.end(), 0.0f);
        const auto t = std::chrono::steady_clock::now();
        constraint->mask(std::span<const std::int32_t>(ids).first(i), row);
        const double d = seconds_since(t);
        rows.push_back(d);
        total += d;
        const bool ok = i < ids.size() ? row[static_cast<std::size_t>(ids[i])] == 0.0f
                                       : std::any_of(eos.begin(), eos.end(), [&](std::int32_t e) { return row[static_cast<std::size_t>(e)] == 0.0f; });
        if (!ok) {
          std::fprintf(stderr, "%s: the reply's token %zu is masked: the reply does not fit its schema\n", c.name, i);
          return 1;
        }
      }
      totals.push_back(total);
      if (r == 0 || total <= *std::min_element(totals.begin(), totals.end() - 1)) per_row = rows;
      stats = tf::grammar_mask_stats(*constraint);
    }
    std::sort(totals.begin(), totals.end());
    const double total = totals[totals.size() / 2];
    std::sort(per_row.begin(), per_row.end());
    const auto n = per_row.size();
    std::printf("%-18s %6zu %6lld %6lld %10.1f %10.1f %10.1f\n", c.name, n, static_cast<long long>(stats.walks),
                static_cast<long long>(stats.cached), total / static_cast<double>(n) * 1e6, per_row[n / 2] * 1e6,
                per_row.back() * 1e6);
    all_time += total;
    all_tokens += n;
  }
  std::printf("all: %zu rows, mean %.1f us a row\n", all_tokens, all_time / static_cast<double>(all_tokens) * 1e6);
  return 0;
}
