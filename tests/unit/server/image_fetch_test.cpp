// --vision-urls: the address policy (public unicast only) and the fetch's hop rules (https, port 443, every
// hop's host resolved and checked, at most 3 redirects, the size bound), over a scripted transport and resolver:
// no network is reachable in CI, so libcurl's own exchange is not exercised here.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <map>

#include "server/address_policy.h"
#include "server/api_error.h"
#include "server/image_fetch.h"

namespace tf::server {
namespace {

TEST(AddressPolicy, OnlyPublicUnicastPasses) {
  for (const char* a :
       {"8.8.8.8", "1.1.1.1", "93.184.216.34", "2606:4700:4700::1111", "2a00:1450:4001:82b::200e", "::ffff:8.8.8.8"})
    EXPECT_EQ(non_public(std::string(a)), "") << a;
  const std::pair<const char*, const char*> refused[] = {
      {"127.0.0.1", "loopback"},
      {"127.255.0.9", "loopback"},
      {"10.1.2.3", "private"},
      {"172.16.0.1", "private"},
      {"172.31.255.255", "private"},
      {"192.168.1.1", "private"},
      {"169.254.169.254", "link-local"},  // cloud metadata services
      {"100.64.0.1", "carrier-grade NAT"},
      {"0.0.0.0", "unspecified"},
      {"224.0.0.1", "multicast"},
      {"239.255.255.250", "multicast"},
      {"255.255.255.255", "broadcast"},
      {"192.0.2.1", "documentation"},
      {"198.18.0.1", "benchmarking"},
      {"::1", "loopback"},
      {"::", "unspecified"},
      {"::ffff:127.0.0.1", "loopback (IPv4-mapped)"},
      {"::ffff:10.0.0.1", "private (IPv4-mapped)"},
      {"::ffff:169.254.169.254", "link-local (IPv4-mapped)"},
      {"fe80::1", "link-local"},
      {"fc00::1", "private"},
      {"fd12:3456::1", "private"},
      {"ff02::1", "multicast"},
      {"2001:db8::1", "documentation"},
      {"64:ff9b::a00:1", "NAT64"},
      {"2002:a00:1::", "6to4"},
      {"2001::1", "Teredo"},
      {"::10.0.0.1", "IPv4-compatible"},
      {"fec0::1", "site-local"},
      {"4000::1", "not global unicast"},
      {"localhost", "not an IP address"},
  };
  for (const auto& [address, why] : refused) {
    const auto got = non_public(std::string(address));
    EXPECT_NE(got.find(why), std::string::npos) << address << ": " << got;
  }
  EXPECT_EQ(non_public(std::string("172.15.255.255")), "");
  EXPECT_EQ(non_public(std::string("172.32.0.0")), "");
  EXPECT_EQ(non_public(std::string("100.128.0.1")), "");
}

std::string refusal(const std::function<void()>& f) {
  try {
    f();
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_EQ(e.param(), "p");
    return e.what();
  }
  ADD_FAILURE() << "not refused";
  return {};
}

TEST(ImageFetch, UrlsMustBeHttpsOnPort443WithoutCredentials) {
  EXPECT_EQ(checked_https_host("https://example.com/a.png", "p"), "example.com");
  EXPECT_EQ(checked_https_host("https://example.com:443/a.png", "p"), "example.com");
  EXPECT_EQ(checked_https_host("https://[2606:4700::1]/a.png", "p"), "2606:4700::1");
  EXPECT_NE(refusal([] { checked_https_host("http://example.com/a.png", "p"); }).find("https"), std::string::npos);
  EXPECT_NE(refusal([] { checked_https_host("ftp://example.com/a.png", "p"); }).find("https"), std::string::npos);
  EXPECT_NE(refusal([] { checked_https_host("https://example.com:8443/a.png", "p"); }).find("port 443, not 8443"),
            std::string::npos);
  EXPECT_NE(refusal([] { checked_https_host("https://user:pw@example.com/a.png", "p"); }).find("credentials"),
            std::string::npos);
  EXPECT_NE(refusal([] { checked_https_host("https://", "p"); }).find("parse"), std::string::npos);
}

// A scripted web: each URL's answer, and the hops asked, in order.
struct FakeWeb final : HopTransport {
  std::map<std::string, HopResult> answers;
  std::vector<std::pair<std::string, std::string>> asked;  // url, the address it was pinned to
  HopResult get(const std::string& url, const std::string&, const std::string& address, std::chrono::milliseconds,
                std::size_t max_bytes) override {
    asked.emplace_back(url, address);
    auto r = answers.at(url);
    if (r.body.size() > max_bytes) return HopResult{0, {}, {}, true, {}};
    return r;
  }
};

const Resolver kDns = [](const std::string& host, std::string& error) -> std::vector<std::string> {
  static const std::map<std::string, std::vector<std::string>> names = {
      {"img.example", {"93.184.216.34"}},   {"cdn.example", {"2606:4700::6810:1"}},
      {"inside.example", {"10.0.0.7"}},     {"split.example", {"93.184.216.35", "127.0.0.1"}},
      {"93.184.216.36", {"93.184.216.36"}}, {"169.254.169.254", {"169.254.169.254"}},
  };
  const auto it = names.find(host);
  if (it == names.end()) {
    error = "Name or service not known";
    return {};
  }
  return it->second;
};

HopResult ok(std::vector<std::uint8_t> body) { return {200, {}, std::move(body), false, {}}; }
HopResult redirect(std::string to) { return {302, std::move(to), {}, false, {}}; }

TEST(ImageFetch, FollowsRedirectsCheckingEveryHop) {
  FakeWeb web;
  web.answers["https://img.example/a"] = redirect("https://cdn.example/b");
  web.answers["https://cdn.example/b"] = ok({1, 2, 3});
  EXPECT_EQ(fetch_image_url("https://img.example/a", "p", 100, {}, web, kDns), (std::vector<std::uint8_t>{1, 2, 3}));
  // Each hop pinned to the address its host resolved to (and was checked).
  EXPECT_EQ(web.asked,
            (std::vector<std::pair<std::string, std::string>>{{"https://img.example/a", "93.184.216.34"},
                                                              {"https://cdn.example/b", "2606:4700::6810:1"}}));
}

TEST(ImageFetch, RefusesInwardHopsAndLongChains) {
  FakeWeb web;
  web.answers["https://img.example/inward"] = redirect("https://inside.example/x");
  web.answers["https://img.example/metadata"] = redirect("https://169.254.169.254/latest/meta-data");
  web.answers["https://img.example/plain"] = redirect("http://img.example/x");
  web.answers["https://img.example/port"] = redirect("https://img.example:8443/x");
  for (int i = 0; i < 5; ++i)
    web.answers[fmt::format("https://img.example/{}", i)] = redirect(fmt::format("https://img.example/{}", i + 1));
  web.answers["https://img.example/5"] = ok({1});
  web.answers["https://img.example/big"] = ok(std::vector<std::uint8_t>(101));
  web.answers["https://img.example/gone"] = HopResult{404, {}, {}, false, {}};
  web.answers["https://93.184.216.36/t"] = HopResult{0, {}, {}, false, "Timeout was reached"};
  const auto fetch = [&](const std::string& url) {
    return [&, url] { fetch_image_url(url, "p", 100, {}, web, kDns); };
  };
  EXPECT_NE(refusal(fetch("https://img.example/inward")).find("10.0.0.7, a private address"), std::string::npos);
  EXPECT_NE(refusal(fetch("https://img.example/metadata")).find("link-local"), std::string::npos);
  EXPECT_NE(refusal(fetch("https://img.example/plain")).find("https"), std::string::npos);
  EXPECT_NE(refusal(fetch("https://img.example/port")).find("port 443"), std::string::npos);
  EXPECT_NE(refusal(fetch("https://split.example/x")).find("127.0.0.1, a loopback address"), std::string::npos);
  EXPECT_NE(refusal(fetch("https://nowhere.example/x")).find("does not resolve"), std::string::npos);
  EXPECT_NE(refusal(fetch("https://img.example/big")).find("limit of"), std::string::npos);
  EXPECT_NE(refusal(fetch("https://img.example/gone")).find("HTTP 404"), std::string::npos);
  EXPECT_NE(refusal(fetch("https://93.184.216.36/t")).find("Timeout"), std::string::npos);
  // 0 -> 1 -> 2 -> 3 is three redirects; 4 is one too many. 2 -> 5 is three and fetches.
  EXPECT_NE(refusal(fetch("https://img.example/0")).find("more than 3"), std::string::npos);
  EXPECT_EQ(fetch_image_url("https://img.example/2", "p", 100, {}, web, kDns), std::vector<std::uint8_t>{1});
  // No hop of a refused chain reached past the refused one.
  for (const auto& [url, address] : web.asked) EXPECT_EQ(non_public(address), "") << url;
}

TEST(ImageFetch, TheTimeLimitCoversEveryHop) {
  FakeWeb web;
  web.answers["https://img.example/a"] = redirect("https://img.example/b");
  web.answers["https://img.example/b"] = ok({1});
  EXPECT_NE(refusal([&] {
              fetch_image_url("https://img.example/a", "p", 100, {3, std::chrono::milliseconds(0)}, web, kDns);
            }).find("longer than"),
            std::string::npos);
}

}  // namespace
}  // namespace tf::server
