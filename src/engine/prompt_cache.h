#pragma once
// Retained prompt prefixes (prompt caching): a stream's whole state (KV, conv windows, recurrent matrices) at
// resume points of the chunk plan (engine/chunk_plan.h), so that a later prompt starting with the same tokens
// restores it and prefills only what follows. Keys are a hash of the identity (model, runtime, backend, plan,
// state dtype), the prefix's tokens and the images inside it (an image's placeholder tokens are the same whatever
// the image, so each image's place and content hash are part of the key); an entry keeps its tokens and images
// too, so a hash collision is never trusted.
//
// In memory: an LRU under a byte budget (--prompt-cache-gib), which the memory plan keeps out of the streams'
// room. On disk (--snapshot-dir): each entry is also written, by a background thread, to a file with a
// header (identity, token count, payload size, checksum), atomically (temp file, then rename), the directory
// bounded by --max-snapshot-gib (oldest first out). At start the directory's headers are read; files of
// another identity, or shorter than their header says, are removed with a log line. A payload is read only
// when a lookup wants it, and one failing its checksum is removed the same way, the lookup going on to a
// shorter prefix. Thread-safe: the scheduler inserts and looks up, the HTTP side reads stats().
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "backends/state_image.h"

namespace tf {

struct PromptCacheOptions {
  std::size_t memory_bytes = 0;  // 0: no retained prefixes (and no snapshots)
  std::string snapshot_dir;      // empty: no disk snapshots
  std::size_t disk_bytes = 0;    // bound of the snapshot directory
  std::string identity;          // everything a state's bits depend on besides its tokens
};

// An image in a prompt (--vision): placeholder tokens [start, end) that stand for the image whose content hash
// (families/image_encoder.h: SHA-256 of the tower's input) is `hash`.
struct PromptImage {
  std::int64_t start = 0, end = 0;
  std::string hash;
};

struct PromptCacheStats {
  std::int64_t queries = 0, hits = 0;             // lookups, and those that found a prefix
  std::int64_t query_tokens = 0, hit_tokens = 0;  // prompt tokens looked up, tokens found cached
  std::int64_t entries = 0, disk_files = 0;
  std::size_t bytes = 0, disk_bytes = 0;
  std::int64_t disk_loads = 0, disk_refused = 0;  // payloads read from disk, files refused and removed
};

class PromptCache {
 public:
  // A retained state: where the backend keeps it (StateImage; CUDA: device memory); a disk file's is host bytes.
  using Image = std::shared_ptr<const StateImage>;
  explicit PromptCache(PromptCacheOptions options);
  ~PromptCache();  // finishes pending snapshot writes
  PromptCache(const PromptCache&) = delete;
  PromptCache& operator=(const PromptCache&) = delete;

  bool enabled() const { return options_.memory_bytes > 0; }
  const PromptCacheOptions& options() const { return options_; }

  struct Hit {
    std::int64_t tokens = 0;  // 0: none
    Image state;
  };
  // The longest prefix tokens[0, p) cached, p among `points` (ascending), memory first, then disk. `images`: the
  // prompt's images in order (those starting before p are part of p's key); a point inside an image is skipped.
  Hit lookup(std::span<const std::int32_t> tokens, std::span<const std::int64_t> points,
             std::span<const PromptImage> images = {});
  bool contains(std::span<const std::int32_t> prefix, std::span<const PromptImage> images = {}) const;
  // Retains `state`, the state after `prefix` (evicting the least recently used entries), and queues its
  // snapshot file (the writer thread copies the image's bytes to the host). `images` as for lookup; a prefix that
  // ends inside an image is not retained.
  void insert(std::span<const std::int32_t> prefix, Image state, std::span<const PromptImage> images = {});
  void insert(std::span<const std::int32_t> prefix, std::vector<std::uint8_t> state,
              std::span<const PromptImage> images = {}) {
    insert(prefix, std::make_shared<const HostStateImage>(std::move(state)), images);
  }
  // The images part of a prefix's key: each image before `length` as "start-end:hash;" ("" for none); nullopt
  // when `length` falls inside an image (no state there can be reused).
  static std::optional<std::string> images_key(std::int64_t length, std::span<const PromptImage> images);
  PromptCacheStats stats() const;
  // Waits until queued snapshot files are written (tests, shutdown).
  void flush();

 private:
  struct Entry {
    std::uint64_t key = 0;
    std::vector<std::int32_t> tokens;
    std::string images;  // images_key of the prefix
    Image state;
  };
  struct DiskFile {
    std::string path;
    std::size_t size = 0;
    std::int64_t tokens = 0;
    std::uint64_t serial = 0;  // larger: used more recently
  };
  std::uint64_t key_of(std::span<const std::int32_t> prefix, const std::string& images) const;
  void scan_dir();
  void writer_loop();
  void write_file(const Entry& e);
  void trim_disk_locked();
  // Reads and checks a snapshot's payload; null (and the file removed, with a log line) when it fails.
  std::shared_ptr<Entry> load_file(std::uint64_t key, std::span<const std::int32_t> prefix, const std::string& images);
  void refuse_locked(const std::string& path, const std::string& why);
  void insert_locked(std::shared_ptr<Entry> e);

  const PromptCacheOptions options_;
  std::uint64_t identity_hash_ = 0;
  mutable std::mutex mu_;
  std::list<std::shared_ptr<Entry>> lru_;  // front: most recent
  std::unordered_map<std::uint64_t, std::list<std::shared_ptr<Entry>>::iterator> index_;
  std::unordered_map<std::uint64_t, DiskFile> disk_;
  std::uint64_t serial_ = 0;
  PromptCacheStats stats_;
  // The snapshot writer.
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Entry>> pending_;
  bool writing_ = false, stopping_ = false;
  std::thread writer_;
};

// 64-bit checksum of bytes (snapshot payloads): fast enough for gigabytes, not cryptographic.
std::uint64_t payload_checksum(std::span<const std::uint8_t> bytes, std::uint64_t seed = 0);

}  // namespace tf
