#include "server/router.h"

#include <algorithm>

namespace tf::server {

std::vector<std::string> Router::split(std::string_view path) {
  if (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  std::vector<std::string> segs;
  if (path.empty() || path == "/") return segs;
  std::size_t at = path.front() == '/' ? 1 : 0;
  for (;;) {
    const auto next = path.find('/', at);
    // An empty segment ("//") is kept: it matches no literal and no capture.
    segs.emplace_back(path.substr(at, next == std::string_view::npos ? std::string_view::npos : next - at));
    if (next == std::string_view::npos) break;
    at = next + 1;
  }
  return segs;
}

int Router::add(std::string method, std::string_view pattern) {
  routes_.push_back(Route{std::move(method), split(pattern), std::string(pattern)});
  return static_cast<int>(routes_.size()) - 1;
}

bool Router::matches(const Route& r, const std::vector<std::string>& segs, std::vector<std::string>* params) {
  if (r.segments.size() != segs.size()) return false;
  std::vector<std::string> captured;
  for (std::size_t i = 0; i < segs.size(); ++i) {
    const auto& want = r.segments[i];
    if (want.size() >= 2 && want.front() == '{' && want.back() == '}') {
      if (segs[i].empty()) return false;
      captured.push_back(segs[i]);
    } else if (want != segs[i]) {
      return false;
    }
  }
  if (params) *params = std::move(captured);
  return true;
}

std::vector<std::pair<std::string, std::string>> Router::routes() const {
  std::vector<std::pair<std::string, std::string>> all;
  for (const auto& r : routes_) all.emplace_back(r.method, r.pattern);
  return all;
}

RouteMatch Router::match(std::string_view method, std::string_view path) const {
  RouteMatch m;
  if (path.empty() || path.front() != '/') return m;
  const auto segs = split(path);
  const std::string_view want = method == "HEAD" ? std::string_view("GET") : method;
  std::vector<std::string> allowed;
  for (std::size_t i = 0; i < routes_.size(); ++i) {
    const auto& r = routes_[i];
    if (r.method == want && matches(r, segs, &m.params)) {
      m.kind = RouteMatch::Kind::Found;
      m.route = static_cast<int>(i);
      return m;
    }
    if (matches(r, segs, nullptr) && std::find(allowed.begin(), allowed.end(), r.method) == allowed.end())
      allowed.push_back(r.method);
  }
  if (!allowed.empty()) {
    m.kind = RouteMatch::Kind::MethodNotAllowed;
    for (const auto& a : allowed) m.allow += (m.allow.empty() ? "" : ", ") + a;
  }
  return m;
}

}  // namespace tf::server
