// `tensorfold update [--check]`: compares the running version with the newest release in a JSON feed,
// prints the changes since, and upgrades through pip when pip installed this executable.
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>

#include "cli/commands.h"
#include "cli/release_feed.h"
#include "hub/http_client.h"
#include "tensorfold/version.h"

extern char** environ;

namespace tf::cli {
namespace fs = std::filesystem;
namespace {

struct UpdateFlags {
  bool check = false;
  std::string feed;
};

std::string feed_url(const UpdateFlags& f) {
  if (!f.feed.empty()) return f.feed;
  if (const char* env = std::getenv("TENSORFOLD_UPDATE_FEED"); env != nullptr && *env != '\0') return env;
  return kUpdateFeed;
}

std::string fetch_feed(const std::string& url) {
  std::string at = url;
  for (int hop = 0; hop < 5; ++hop) {
    hub::HttpRequest req;
    req.url = at;
    req.stall_timeout_s = 10;
    const hub::HttpResponse r = hub::http_perform(req);
    if (r.status >= 300 && r.status < 400 && !r.header("location").empty()) {
      at = hub::resolve_location(at, r.header("location"));
      continue;
    }
    if (r.status != 200) throw std::runtime_error(fmt::format("{} answered {}", at, r.status));
    return r.body;
  }
  throw std::runtime_error(url + ": too many redirects");
}

// The python of the environment pip installed this executable into: pip puts the executable in the
// environment's bin/ and records the install in lib/pythonX.Y/site-packages/tensorfold-*.dist-info,
// whose INSTALLER file says "pip". nullopt for a build tree, a Debian package, a copied binary.
std::optional<fs::path> pip_python() {
  std::error_code ec;
  const fs::path exe = fs::canonical("/proc/self/exe", ec);
  if (ec) return std::nullopt;
  const fs::path prefix = exe.parent_path().parent_path();
  for (const auto& lib : fs::directory_iterator(prefix / "lib", ec)) {
    std::error_code ec2;
    for (const auto& entry : fs::directory_iterator(lib.path() / "site-packages", ec2)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("tensorfold-", 0) != 0 || name.find(".dist-info") == std::string::npos) continue;
      std::ifstream installer(entry.path() / "INSTALLER");
      std::string who;
      std::getline(installer, who);
      if (who != "pip") continue;
      for (const char* py : {"python", "python3"})
        if (fs::exists(exe.parent_path() / py, ec2)) return exe.parent_path() / py;
    }
  }
  return std::nullopt;
}

int run_pip_install(const fs::path& python, const std::string& requirement) {
  const std::string py = python.string();
  std::vector<std::string> args = {py, "-m", "pip", "install", "--upgrade", requirement};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  fmt::print("running: {} -m pip install --upgrade {}\n", py, requirement);
  std::fflush(stdout);
  pid_t pid = 0;
  if (posix_spawn(&pid, py.c_str(), nullptr, nullptr, argv.data(), environ) != 0) return 127;
  int status = 0;
  if (waitpid(pid, &status, 0) < 0) return 127;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

int run_update(const UpdateFlags& f) {
  const std::string url = feed_url(f);
  if (url.empty()) {
    fmt::print(stderr, "tensorfold update: no release feed: pass --feed URL or set TENSORFOLD_UPDATE_FEED\n");
    return 1;
  }
  std::vector<Release> newer;
  try {
    newer = releases_since(parse_release_feed(fetch_feed(url)), kVersion);
  } catch (const std::exception& e) {
    fmt::print(stderr, "tensorfold update: {}: {}\n", url, e.what());
    return 1;
  }
  if (newer.empty()) {
    fmt::print("tensorfold {} is the newest release\n", kVersion);
    return 0;
  }
  fmt::print("tensorfold {} is available (running {})\n", newer.front().version, kVersion);
  for (const auto& r : newer) {
    fmt::print("\n## {}{}\n", r.version, r.date.empty() ? std::string() : " (" + r.date + ")");
    for (const auto& n : r.notes) fmt::print("- {}\n", n);
  }
  if (f.check) return 0;
  std::fflush(stdout);
  const auto python = pip_python();
  if (!python) {
    fmt::print(stderr,
               "tensorfold update: this tensorfold was not installed by pip; update it the way it was "
               "installed (a source build: git pull && make build)\n");
    return 1;
  }
  const int rc = run_pip_install(*python, newer.front().pip);
  if (rc != 0) {
    fmt::print(stderr, "tensorfold update: pip install {} failed (exit {})\n", newer.front().pip, rc);
    return 1;
  }
  fmt::print("tensorfold updated to {}\n", newer.front().version);
  return 0;
}

}  // namespace

Command add_update_command(CLI::App& app) {
  auto f = std::make_shared<UpdateFlags>();
  auto* sub = app.add_subcommand("update",
                                 "Show the changes in newer releases and upgrade (through pip, when pip "
                                 "installed tensorfold)");
  sub->add_flag("--check", f->check, "Only report: the newest version and the changes since this one");
  sub->add_option("--feed", f->feed,
                  "URL of the JSON release feed (default: $TENSORFOLD_UPDATE_FEED, else the built-in one)");
  return {sub, [f] { return run_update(*f); }};
}

}  // namespace tf::cli
