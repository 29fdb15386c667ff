#pragma once
// Matches a method and path to a route: exact segments and "{name}" segments that capture one path segment.
// A path that matches some route but not with this method is MethodNotAllowed (405, with the Allow list);
// a path no route matches is NotFound (404). One trailing slash is ignored.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tf::server {

struct RouteMatch {
  enum class Kind { Found, NotFound, MethodNotAllowed };
  Kind kind = Kind::NotFound;
  int route = -1;                   // the id add() returned, when Found
  std::vector<std::string> params;  // the captured segments, in order
  std::string allow;                // "GET, DELETE" when MethodNotAllowed
};

class Router {
 public:
  // Returns the route's id (0, 1, ...). `method` is upper case ("GET"); HEAD matches GET routes.
  int add(std::string method, std::string_view pattern);
  RouteMatch match(std::string_view method, std::string_view path) const;
  // Every route as {method, pattern} ("GET", "/v1/models/{id}"), in the order added.
  std::vector<std::pair<std::string, std::string>> routes() const;

 private:
  struct Route {
    std::string method;
    std::vector<std::string> segments;  // "{…}" captures
    std::string pattern;
  };
  static std::vector<std::string> split(std::string_view path);
  static bool matches(const Route& r, const std::vector<std::string>& segs, std::vector<std::string>* params);
  std::vector<Route> routes_;
};

}  // namespace tf::server
