#pragma once
// The checkpoints the rules read, across every tier's catalog: a view over
// the records where they lie (one pointer each), not a copy of them. At
// 100,000 checkpoints a copy per rules cycle was 36 MB. Plain data; the
// records must outlive the view (the rules cycle's catalogs do).

#include <cstddef>
#include <iterator>
#include <span>
#include <vector>

#include "model/checkpoint.hpp"

namespace ckptmon {

class CheckpointView {
 public:
  class Iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = Checkpoint;
    using difference_type = std::ptrdiff_t;
    using pointer = const Checkpoint*;
    using reference = const Checkpoint&;

    Iterator() = default;
    explicit Iterator(const Checkpoint* const* p) : p_(p) {}
    reference operator*() const { return **p_; }
    pointer operator->() const { return *p_; }
    Iterator& operator++() {
      ++p_;
      return *this;
    }
    Iterator operator++(int) {
      Iterator old = *this;
      ++p_;
      return old;
    }
    bool operator==(const Iterator& o) const { return p_ == o.p_; }

   private:
    const Checkpoint* const* p_ = nullptr;
  };
  using iterator = Iterator;
  using const_iterator = Iterator;

  CheckpointView() = default;
  // Every record of `all`, in order (a test's vector, a one-shot scan's).
  // Implicit, as the span it replaced was.
  CheckpointView(std::span<const Checkpoint> all) {
    refs_.reserve(all.size());
    for (const Checkpoint& c : all) refs_.push_back(&c);
  }
  CheckpointView(const std::vector<Checkpoint>& all)
      : CheckpointView(std::span<const Checkpoint>(all)) {}

  // Appends every record of `more` (one tier's catalog).
  void add(std::span<const Checkpoint> more) {
    refs_.reserve(refs_.size() + more.size());
    for (const Checkpoint& c : more) refs_.push_back(&c);
  }

  Iterator begin() const { return Iterator(refs_.data()); }
  Iterator end() const { return Iterator(refs_.data() + refs_.size()); }
  std::size_t size() const { return refs_.size(); }
  bool empty() const { return refs_.empty(); }
  const Checkpoint& operator[](std::size_t i) const { return *refs_[i]; }

 private:
  std::vector<const Checkpoint*> refs_;
};

}  // namespace ckptmon
