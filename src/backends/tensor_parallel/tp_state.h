#pragma once
// A stream's state under tensor parallelism: one store per rank, each holding its own heads' keys and values
// (or recurrent states). They move together: lengths agree, truncation and restore reach every rank, and a
// snapshot is the ranks' snapshots one after another.
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "backends/backend.h"

namespace tf {

// The ranks' images of one state, kept where each rank computes.
class RankImages final : public StateImage {
 public:
  explicit RankImages(std::vector<std::shared_ptr<const StateImage>> ranks) : ranks_(std::move(ranks)) {}
  std::size_t bytes() const override;
  std::vector<std::uint8_t> host_bytes() const override;
  const std::vector<std::shared_ptr<const StateImage>>& ranks() const { return ranks_; }

 private:
  std::vector<std::shared_ptr<const StateImage>> ranks_;
};

// The snapshot of several ranks' states as one byte string: the count, then each rank's length and bytes.
std::vector<std::uint8_t> join_rank_bytes(const std::vector<std::vector<std::uint8_t>>& ranks);
// Back into the ranks' bytes; std::invalid_argument when the bytes are not `ranks` ranks' snapshots.
std::vector<std::span<const std::uint8_t>> split_rank_bytes(std::span<const std::uint8_t> bytes, std::size_t ranks);

// A StateStore of type Base (KvCache, RecurrentState) made of one store per rank.
template <class Base>
class RankStates final : public Base {
 public:
  // `settle` runs the ops queued for the ranks (tp_backend.cpp: ranks apart), so that every call here sees
  // the state every op recorded before it left.
  RankStates(std::vector<std::unique_ptr<Base>> ranks, std::function<void()> settle)
      : ranks_(std::move(ranks)), settle_(std::move(settle)) {}
  Base* rank(std::size_t r) const { return ranks_[r].get(); }
  std::int64_t length() const override {
    settle_();
    return ranks_.front()->length();
  }
  void truncate(std::int64_t length) override {
    settle_();
    for (auto& s : ranks_) s->truncate(length);
  }
  std::size_t bytes() const override {
    std::size_t n = 0;
    for (const auto& s : ranks_) n += s->bytes();
    return n;
  }
  std::vector<std::uint8_t> snapshot() const override {
    settle_();
    std::vector<std::vector<std::uint8_t>> parts;
    for (const auto& s : ranks_) parts.push_back(s->snapshot());
    return join_rank_bytes(parts);
  }
  void restore(std::span<const std::uint8_t> bytes) override {
    settle_();
    const auto parts = split_rank_bytes(bytes, ranks_.size());
    for (std::size_t r = 0; r < ranks_.size(); ++r) ranks_[r]->restore(parts[r]);
  }
  std::shared_ptr<const StateImage> image() const override {
    settle_();
    std::vector<std::shared_ptr<const StateImage>> parts;
    for (const auto& s : ranks_) parts.push_back(s->image());
    return std::make_shared<RankImages>(std::move(parts));
  }
  void restore_image(const StateImage& image) override {
    settle_();
    const auto* mine = dynamic_cast<const RankImages*>(&image);
    if (mine == nullptr || mine->ranks().size() != ranks_.size()) return restore_from_bytes(*this, image);
    for (std::size_t r = 0; r < ranks_.size(); ++r) ranks_[r]->restore_image(*mine->ranks()[r]);
  }

 private:
  std::vector<std::unique_ptr<Base>> ranks_;
  std::function<void()> settle_;
};

}  // namespace tf
