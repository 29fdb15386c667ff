#define PCRE2_CODE_UNIT_WIDTH 8
#include "text/tokenizer/regex.h"

#include <pcre2.h>
#include <utf8proc.h>

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <stdexcept>

#include "text/tokenizer/unicode.h"

namespace tf::tokenizer_detail {

namespace {

// Unicode White_Space, which Oniguruma's \s matches.
constexpr std::string_view kWhiteSpace =
    "\\t\\n\\x0B\\f\\r\\x20\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}";

pcre2_code* as_code(void* p) { return static_cast<pcre2_code*>(p); }

// Per-thread match state: one ovector pair is enough (only the whole match is used) and a JIT stack larger
// than the default, for long runs of one character class.
struct ThreadMatchState {
  pcre2_match_data* data = nullptr;
  pcre2_match_context* context = nullptr;
  pcre2_jit_stack* jit_stack = nullptr;
  ThreadMatchState() {
    data = pcre2_match_data_create(1, nullptr);
    context = pcre2_match_context_create(nullptr);
    jit_stack = pcre2_jit_stack_create(64 * 1024, 8 * 1024 * 1024, nullptr);
    if (context && jit_stack) pcre2_jit_stack_assign(context, nullptr, jit_stack);
  }
  ~ThreadMatchState() {
    pcre2_match_data_free(data);
    pcre2_match_context_free(context);
    pcre2_jit_stack_free(jit_stack);
  }
  ThreadMatchState(const ThreadMatchState&) = delete;
  ThreadMatchState& operator=(const ThreadMatchState&) = delete;
};

ThreadMatchState& match_state() {
  thread_local ThreadMatchState state;
  return state;
}

std::string pcre2_message(int code) {
  PCRE2_UCHAR buf[256];
  if (pcre2_get_error_message(code, buf, sizeof buf) < 0) return "error " + std::to_string(code);
  return std::string(reinterpret_cast<const char*>(buf));
}

// Code points that PCRE2's Unicode tables (PCRE2 10.42: Unicode 14) leave unassigned but utf8proc's (Unicode 15,
// closer to what the reference's Oniguruma has) assign: found once by running \p{Cn} over every assigned code point.
const std::vector<char32_t>& newly_assigned() {
  static const std::vector<char32_t> list = [] {
    std::string all;
    for (char32_t c = 0; c < 0x110000; ++c) {
      if (c >= 0xD800 && c <= 0xDFFF) continue;
      if (utf8proc_category(static_cast<utf8proc_int32_t>(c)) == UTF8PROC_CATEGORY_CN) continue;
      utf8_append(all, c);
    }
    std::vector<char32_t> found;
    int error = 0;
    PCRE2_SIZE offset = 0;
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>("\\p{Cn}"), PCRE2_ZERO_TERMINATED,
                                     PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
    if (!code) return found;
    pcre2_match_data* md = pcre2_match_data_create(1, nullptr);
    std::size_t pos = 0;
    while (md && pos < all.size() &&
           pcre2_match(code, reinterpret_cast<PCRE2_SPTR>(all.data()), all.size(), pos, PCRE2_NO_UTF_CHECK, md, nullptr) >= 0) {
      const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
      std::size_t i = ov[0];
      found.push_back(utf8_next(all, i));
      pos = i;
    }
    pcre2_match_data_free(md);
    pcre2_code_free(code);
    return found;
  }();
  return list;
}

// Whether a utf8proc category belongs to the general-category property `name` (L, Lu, N, P, S, ...).
bool in_property(int category, std::string_view name) {
  static const char* const kNames[] = {"Cn", "Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No",
                                       "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So", "Zs",
                                       "Zl", "Zp", "Cc", "Cf", "Cs", "Co"};
  if (category < 0 || category >= static_cast<int>(std::size(kNames))) return false;
  const std::string_view cat = kNames[category];
  return name.size() == 1 ? cat[0] == name[0] : cat == name;
}

// The code points to add to \p{name} (empty when name is not a general category).
std::string property_supplement(std::string_view name) {
  static const std::string_view kKnown = "L Lu Ll Lt Lm Lo M Mn Mc Me N Nd Nl No P Pc Pd Ps Pe Pi Pf Po S Sm Sc Sk So";
  bool known = false;
  for (std::size_t i = 0; i < kKnown.size();) {
    const std::size_t sp = std::min(kKnown.find(' ', i), kKnown.size());
    if (kKnown.substr(i, sp - i) == name) known = true;
    i = sp + 1;
  }
  if (!known) return {};
  std::string out;
  const auto& list = newly_assigned();
  for (std::size_t k = 0; k < list.size();) {
    const char32_t c = list[k];
    if (!in_property(utf8proc_category(static_cast<utf8proc_int32_t>(c)), name)) {
      ++k;
      continue;
    }
    std::size_t j = k;  // extend a run of consecutive code points with the same answer
    while (j + 1 < list.size() && list[j + 1] == list[j] + 1 &&
           in_property(utf8proc_category(static_cast<utf8proc_int32_t>(list[j + 1])), name))
      ++j;
    char buf[40];
    if (j == k)
      std::snprintf(buf, sizeof buf, "\\x{%X}", static_cast<unsigned>(c));
    else
      std::snprintf(buf, sizeof buf, "\\x{%X}-\\x{%X}", static_cast<unsigned>(c), static_cast<unsigned>(list[j]));
    out += buf;
    k = j + 1;
  }
  return out;
}

}  // namespace

std::string translate_pattern(std::string_view p) {
  std::string out;
  out.reserve(p.size() + 32);
  bool in_class = false;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char n = p[i + 1];
      ++i;
      if (n == 's') {
        if (in_class) {
          out += kWhiteSpace;
        } else {
          out += '[';
          out += kWhiteSpace;
          out += ']';
        }
        continue;
      }
      if (n == 'S' && !in_class) {
        out += "[^";
        out += kWhiteSpace;
        out += ']';
        continue;
      }
      if ((n == 'p' || n == 'P') && i + 1 < p.size()) {
        // \p{X} / \pX: a general category; add what PCRE2's older tables miss.
        std::string_view name;
        std::size_t end = i;
        if (p[i + 1] == '{') {
          const std::size_t close = p.find('}', i + 2);
          if (close != std::string_view::npos) {
            name = p.substr(i + 2, close - i - 2);
            end = close;
          }
        } else {
          name = p.substr(i + 1, 1);
          end = i + 1;
        }
        const std::string extra = name.empty() || name[0] == '^' ? std::string() : property_supplement(name);
        const std::string_view original = p.substr(i - 1, end - i + 2);
        if (!extra.empty() && (n == 'p' || !in_class)) {
          if (in_class) {
            out += original;
            out += extra;
          } else {
            out += n == 'p' ? "[" : "[^";
            out += "\\p{";
            out += name;
            out += '}';
            out += extra;
            out += ']';
          }
          i = end;
          continue;
        }
        out += original;
        i = end;
        continue;
      }
      out += c;
      out += n;
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out += c;
      if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
      if (i + 1 < p.size() && p[i + 1] == ']') out += p[++i];  // a leading ] is a literal
      continue;
    }
    if (in_class && c == '[' && i + 1 < p.size() && p[i + 1] == ':') {  // POSIX class [:alpha:]
      const std::size_t end = p.find(":]", i + 2);
      if (end != std::string_view::npos) {
        out.append(p.substr(i, end + 2 - i));
        i = end + 1;
        continue;
      }
    }
    if (in_class && c == ']') in_class = false;
    out += c;
  }
  return out;
}

Regex::Regex(std::string_view pattern) : pattern_(pattern) {
  const std::string translated = translate_pattern(pattern);
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_MULTILINE, &error, &offset, nullptr);
  if (!code)
    throw std::invalid_argument("regex does not compile (" + pcre2_message(error) + " at offset " +
                                std::to_string(offset) + "): " + std::string(pattern));
  code_ = code;
  jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
}

Regex::~Regex() { pcre2_code_free(as_code(code_)); }

void Regex::find_all(std::string_view subject, std::vector<std::pair<std::size_t, std::size_t>>& out) const {
  ThreadMatchState& st = match_state();
  if (!st.data || !st.context) throw std::runtime_error("out of memory for regex matching");
  const auto* s = reinterpret_cast<PCRE2_SPTR>(subject.data());
  const std::size_t n = subject.size();
  std::size_t pos = 0;
  bool have_last = false;
  std::size_t last_end = 0;
  while (pos <= n) {
    int rc = pcre2_match(as_code(code_), s, n, pos, PCRE2_NO_UTF_CHECK, st.data, st.context);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT && jit_)
      rc = pcre2_match(as_code(code_), s, n, pos, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, st.data, st.context);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) throw std::runtime_error("regex matching failed: " + pcre2_message(rc));
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(st.data);
    const std::size_t b = ov[0], e = ov[1];
    if (b == e) {
      if (!(have_last && last_end == e)) {
        out.emplace_back(b, e);
        have_last = true;
        last_end = e;
      }
      if (b >= n) break;
      pos = b + utf8_len(static_cast<unsigned char>(subject[b]));
      continue;
    }
    out.emplace_back(b, e);
    have_last = true;
    last_end = e;
    pos = e;
  }
}

}  // namespace tf::tokenizer_detail
