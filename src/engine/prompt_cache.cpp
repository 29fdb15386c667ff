#include "engine/prompt_cache.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace tf {
namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'T', 'F', 'S', 'N', 'A', 'P', '0', '1'};
constexpr const char* kSuffix = ".tfsnap";

std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  // splitmix64's finalizer over the running value: every input bit reaches every output bit.
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebULL;
  h ^= h >> 31;
  return h;
}

std::string hex(std::uint64_t v) { return fmt::format("{:016x}", v); }

void log_line(const std::string& s) {
  std::fputs(("tensorfold serve: " + s + "\n").c_str(), stderr);
  std::fflush(stderr);
}

}  // namespace

std::uint64_t payload_checksum(std::span<const std::uint8_t> bytes, std::uint64_t seed) {
  // Four independent lanes over 8-byte words keep the multiplies pipelined (several GB/s), then fold.
  std::uint64_t lane[4] = {seed ^ 0x243f6a8885a308d3ULL, seed ^ 0x13198a2e03707344ULL, seed ^ 0xa4093822299f31d0ULL,
                           seed ^ 0x082efa98ec4e6c89ULL};
  const std::size_t words = bytes.size() / 8;
  std::size_t i = 0;
  for (; i + 4 <= words; i += 4)
    for (int k = 0; k < 4; ++k) {
      std::uint64_t w;
      std::memcpy(&w, bytes.data() + (i + k) * 8, 8);
      lane[k] = (lane[k] ^ w) * 0x9fb21c651e98df25ULL;
      lane[k] ^= lane[k] >> 29;
    }
  std::uint64_t h = bytes.size();
  for (auto l : lane) h = mix(h, l);
  for (std::size_t at = i * 8; at < bytes.size(); ++at) h = mix(h, bytes[at]);
  return h;
}

PromptCache::PromptCache(PromptCacheOptions options) : options_(std::move(options)) {
  identity_hash_ = mix(0x5446534e4150ULL, std::hash<std::string>{}(options_.identity));
  if (!enabled() || options_.snapshot_dir.empty()) return;
  std::error_code ec;
  fs::create_directories(options_.snapshot_dir, ec);
  if (ec) {
    log_line(fmt::format("snapshot directory {}: {}; snapshots off", options_.snapshot_dir, ec.message()));
    const_cast<PromptCacheOptions&>(options_).snapshot_dir.clear();
    return;
  }
  scan_dir();
  writer_ = std::thread([this] { writer_loop(); });
}

PromptCache::~PromptCache() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (writer_.joinable()) writer_.join();
}

namespace {
// A text prefix's key is the tokens' alone (as before images had keys: older snapshots stay valid); an image
// prefix's mixes in its images' places and content hashes.
std::uint64_t with_images(std::uint64_t key, const std::string& images) {
  return images.empty() ? key : mix(key, std::hash<std::string>{}(images));
}
}  // namespace

std::uint64_t PromptCache::key_of(std::span<const std::int32_t> prefix, const std::string& images) const {
  std::uint64_t h = identity_hash_;
  for (auto t : prefix) h = mix(h, static_cast<std::uint32_t>(t));
  return with_images(mix(h, prefix.size()), images);
}

std::optional<std::string> PromptCache::images_key(std::int64_t length, std::span<const PromptImage> images) {
  std::string key;
  for (const auto& i : images) {
    if (i.start >= length) break;
    if (i.end > length) return std::nullopt;
    key += fmt::format("{}-{}:{};", i.start, i.end, i.hash);
  }
  return key;
}

void PromptCache::refuse_locked(const std::string& path, const std::string& why) {
  std::error_code ec;
  fs::remove(path, ec);
  ++stats_.disk_refused;
  log_line(fmt::format("snapshot {} refused ({}); removed", path, why));
}

void PromptCache::scan_dir() {
  std::lock_guard lock(mu_);
  std::error_code ec;
  std::vector<std::pair<fs::file_time_type, std::uint64_t>> by_age;
  for (const auto& de : fs::directory_iterator(options_.snapshot_dir, ec)) {
    if (!de.is_regular_file(ec)) continue;
    const std::string path = de.path().string();
    const std::string name = de.path().filename().string();
    if (name.ends_with(".tmp")) {  // a write that never finished (a crash): never renamed, never trusted
      fs::remove(path, ec);
      continue;
    }
    if (!name.ends_with(kSuffix)) continue;
    std::ifstream in(path, std::ios::binary);
    char magic[8] = {};
    std::uint32_t header_len = 0;
    in.read(magic, 8);
    in.read(reinterpret_cast<char*>(&header_len), 4);
    if (!in || std::memcmp(magic, kMagic, 8) != 0 || header_len > (1u << 20)) {
      refuse_locked(path, "not a snapshot of this format");
      continue;
    }
    std::string header(header_len, '\0');
    in.read(header.data(), header_len);
    nlohmann::json h = nlohmann::json::parse(header, nullptr, /*allow_exceptions=*/false);
    if (!in || !h.is_object() || !h.contains("identity") || !h.contains("tokens") || !h.contains("payload")) {
      refuse_locked(path, "unreadable header");
      continue;
    }
    if (h["identity"] != options_.identity) {
      refuse_locked(path, "another model, runtime, backend or chunk plan");
      continue;
    }
    const auto tokens = h["tokens"].get<std::int64_t>();
    const auto payload = h["payload"].get<std::uint64_t>();
    const std::uint64_t expect = 12 + header_len + static_cast<std::uint64_t>(tokens) * 4 + payload;
    const auto size = de.file_size(ec);
    if (ec || size != expect) {
      refuse_locked(path, fmt::format("{} bytes where its header says {}: truncated or damaged", size, expect));
      continue;
    }
    const auto stem = name.substr(0, name.size() - std::strlen(kSuffix));
    std::uint64_t key = 0;
    if (std::sscanf(stem.c_str(), "%16lx", &key) != 1 || hex(key) != stem) {
      refuse_locked(path, "a name that is not its key");
      continue;
    }
    disk_[key] = DiskFile{path, static_cast<std::size_t>(size), tokens, 0};
    stats_.disk_bytes += size;
    by_age.emplace_back(de.last_write_time(ec), key);
  }
  std::sort(by_age.begin(), by_age.end());
  for (const auto& [t, key] : by_age) disk_[key].serial = ++serial_;
  stats_.disk_files = static_cast<std::int64_t>(disk_.size());
  trim_disk_locked();
}

void PromptCache::trim_disk_locked() {
  while (stats_.disk_bytes > options_.disk_bytes && !disk_.empty()) {
    auto oldest = std::min_element(disk_.begin(), disk_.end(),
                                   [](const auto& a, const auto& b) { return a.second.serial < b.second.serial; });
    std::error_code ec;
    fs::remove(oldest->second.path, ec);
    stats_.disk_bytes -= oldest->second.size;
    disk_.erase(oldest);
  }
  stats_.disk_files = static_cast<std::int64_t>(disk_.size());
}

bool PromptCache::contains(std::span<const std::int32_t> prefix, std::span<const PromptImage> images) const {
  if (!enabled()) return false;
  const auto ik = images_key(static_cast<std::int64_t>(prefix.size()), images);
  if (!ik) return false;
  std::lock_guard lock(mu_);
  const auto key = key_of(prefix, *ik);
  if (auto it = index_.find(key); it != index_.end())
    return (*it->second)->images == *ik &&
           std::equal(prefix.begin(), prefix.end(), (*it->second)->tokens.begin(), (*it->second)->tokens.end());
  return false;
}

void PromptCache::insert_locked(std::shared_ptr<Entry> e) {
  const std::size_t size = e->state->bytes();
  if (size > options_.memory_bytes) return;
  if (auto it = index_.find(e->key); it != index_.end()) {
    stats_.bytes -= (*it->second)->state->bytes();
    lru_.erase(it->second);
    index_.erase(it);
  }
  while (stats_.bytes + size > options_.memory_bytes && !lru_.empty()) {
    stats_.bytes -= lru_.back()->state->bytes();
    index_.erase(lru_.back()->key);
    lru_.pop_back();
  }
  lru_.push_front(std::move(e));
  index_[lru_.front()->key] = lru_.begin();
  stats_.bytes += size;
  stats_.entries = static_cast<std::int64_t>(lru_.size());
}

void PromptCache::insert(std::span<const std::int32_t> prefix, Image state, std::span<const PromptImage> images) {
  if (!enabled() || !state) return;
  auto ik = images_key(static_cast<std::int64_t>(prefix.size()), images);
  if (!ik) return;
  auto e = std::make_shared<Entry>();
  e->key = key_of(prefix, *ik);
  e->tokens.assign(prefix.begin(), prefix.end());
  e->images = std::move(*ik);
  e->state = std::move(state);
  {
    std::lock_guard lock(mu_);
    insert_locked(e);
    if (!options_.snapshot_dir.empty() && !disk_.contains(e->key) && e->state->bytes() <= options_.disk_bytes)
      pending_.push_back(e);
  }
  cv_.notify_all();
}

std::shared_ptr<PromptCache::Entry> PromptCache::load_file(std::uint64_t key, std::span<const std::int32_t> prefix,
                                                           const std::string& images) {
  std::string path;
  {
    std::lock_guard lock(mu_);
    auto it = disk_.find(key);
    if (it == disk_.end()) return nullptr;
    path = it->second.path;
  }
  std::string why;
  auto e = std::make_shared<Entry>();
  {
    std::ifstream in(path, std::ios::binary);
    char magic[8] = {};
    std::uint32_t header_len = 0;
    in.read(magic, 8);
    in.read(reinterpret_cast<char*>(&header_len), 4);
    std::string header(header_len < (1u << 20) ? header_len : 0, '\0');
    in.read(header.data(), static_cast<std::streamsize>(header.size()));
    const nlohmann::json h = nlohmann::json::parse(header, nullptr, false);
    if (!in || std::memcmp(magic, kMagic, 8) != 0 || !h.is_object() || h.value("identity", "") != options_.identity) {
      why = "unreadable header";
    } else {
      const auto n = h.value("tokens", std::int64_t{-1});
      const auto payload = h.value("payload", std::uint64_t{0});
      e->tokens.resize(static_cast<std::size_t>(std::max<std::int64_t>(n, 0)));
      in.read(reinterpret_cast<char*>(e->tokens.data()), static_cast<std::streamsize>(e->tokens.size() * 4));
      std::vector<std::uint8_t> state(payload);
      in.read(reinterpret_cast<char*>(state.data()), static_cast<std::streamsize>(payload));
      if (!in || in.peek() != std::char_traits<char>::eof()) {
        why = "truncated or longer than its header says";
      } else {
        const auto sum = payload_checksum(
            state, payload_checksum({reinterpret_cast<const std::uint8_t*>(e->tokens.data()), e->tokens.size() * 4}));
        if (hex(sum) != h.value("checksum", ""))
          why = "checksum mismatch: the payload is damaged";
        else if (!std::equal(prefix.begin(), prefix.end(), e->tokens.begin(), e->tokens.end()) ||
                 h.value("images", "") != images)
          return nullptr;  // another prefix of the same hash: a collision, not damage
      }
      e->state = std::make_shared<const HostStateImage>(std::move(state));
      e->images = images;
    }
  }
  std::lock_guard lock(mu_);
  if (!why.empty()) {
    if (auto it = disk_.find(key); it != disk_.end()) {
      stats_.disk_bytes -= it->second.size;
      disk_.erase(it);
    }
    stats_.disk_files = static_cast<std::int64_t>(disk_.size());
    refuse_locked(path, why);
    return nullptr;
  }
  if (auto it = disk_.find(key); it != disk_.end()) it->second.serial = ++serial_;
  ++stats_.disk_loads;
  e->key = key;
  return e;
}

PromptCache::Hit PromptCache::lookup(std::span<const std::int32_t> tokens, std::span<const std::int64_t> points,
                                     std::span<const PromptImage> images) {
  Hit hit;
  if (!enabled()) return hit;
  // One pass for every point's key: the hash runs along the tokens once.
  std::vector<std::uint64_t> keys(points.size());
  std::vector<std::optional<std::string>> image_keys(points.size());
  {
    std::uint64_t h = identity_hash_;
    std::size_t at = 0;
    for (std::size_t p = 0; p < points.size(); ++p) {
      for (; at < static_cast<std::size_t>(points[p]); ++at) h = mix(h, static_cast<std::uint32_t>(tokens[at]));
      image_keys[p] = images_key(points[p], images);
      if (image_keys[p]) keys[p] = with_images(mix(h, static_cast<std::uint64_t>(points[p])), *image_keys[p]);
    }
  }
  for (std::size_t p = points.size(); p-- > 0 && !hit.state;) {
    if (!image_keys[p]) continue;  // inside an image
    const auto prefix = tokens.first(static_cast<std::size_t>(points[p]));
    {
      std::lock_guard lock(mu_);
      if (auto it = index_.find(keys[p]); it != index_.end()) {
        const auto& e = *it->second;
        if (e->images == *image_keys[p] &&
            std::equal(prefix.begin(), prefix.end(), e->tokens.begin(), e->tokens.end())) {
          lru_.splice(lru_.begin(), lru_, it->second);
          hit = {points[p], e->state};
          break;
        }
      }
    }
    if (auto e = load_file(keys[p], prefix, *image_keys[p])) {
      hit = {points[p], e->state};
      std::lock_guard lock(mu_);
      insert_locked(std::move(e));
    }
  }
  std::lock_guard lock(mu_);
  ++stats_.queries;
  stats_.query_tokens += static_cast<std::int64_t>(tokens.size());
  if (hit.state) {
    ++stats_.hits;
    stats_.hit_tokens += hit.tokens;
  }
  return hit;
}

PromptCacheStats PromptCache::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void PromptCache::flush() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return (pending_.empty() && !writing_) || writer_.get_id() == std::thread::id{}; });
}

void PromptCache::writer_loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
    if (pending_.empty()) return;  // stopping, and every queued snapshot written
    auto e = std::move(pending_.front());
    pending_.pop_front();
    writing_ = true;
    lock.unlock();
    write_file(*e);
    lock.lock();
    writing_ = false;
    cv_.notify_all();
  }
}

void PromptCache::write_file(const Entry& e) {
  // Host images are written in place; others (device memory) are copied out here, on the writer's thread.
  std::vector<std::uint8_t> copied;
  std::span<const std::uint8_t> payload;
  if (const auto* host = dynamic_cast<const HostStateImage*>(e.state.get())) {
    payload = host->view();
  } else {
    copied = e.state->host_bytes();
    payload = copied;
  }
  const auto token_bytes =
      std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(e.tokens.data()), e.tokens.size() * 4);
  const nlohmann::json h = {{"identity", options_.identity},
                            {"tokens", e.tokens.size()},
                            {"images", e.images},
                            {"payload", payload.size()},
                            {"checksum", hex(payload_checksum(payload, payload_checksum(token_bytes)))}};
  const std::string header = h.dump();
  const auto len = static_cast<std::uint32_t>(header.size());
  const std::string path = (fs::path(options_.snapshot_dir) / (hex(e.key) + kSuffix)).string();
  const std::string tmp = path + fmt::format(".{}.tmp", static_cast<const void*>(&e));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(kMagic, 8);
    out.write(reinterpret_cast<const char*>(&len), 4);
    out.write(header.data(), len);
    out.write(reinterpret_cast<const char*>(token_bytes.data()), static_cast<std::streamsize>(token_bytes.size()));
    out.write(reinterpret_cast<const char*>(payload.data()), static_cast<std::streamsize>(payload.size()));
    out.flush();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      log_line(fmt::format("snapshot {}: write failed; not kept", path));
      return;
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);  // readers see the whole file or none
  if (ec) {
    fs::remove(tmp, ec);
    return;
  }
  const std::size_t size = 12 + header.size() + token_bytes.size() + payload.size();
  std::lock_guard lock(mu_);
  if (auto it = disk_.find(e.key); it != disk_.end()) stats_.disk_bytes -= it->second.size;
  disk_[e.key] = DiskFile{path, size, static_cast<std::int64_t>(e.tokens.size()), ++serial_};
  stats_.disk_bytes += size;
  trim_disk_locked();
}

}  // namespace tf
