// See allocator.hpp. A lock and a size map: oneDNN allocates a few buffers per
// execution at most, so the bookkeeping is noise next to the kernels.
#include "allocator.hpp"

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <mutex>
#include <new>
#include <unordered_map>

namespace onednn_graph {

namespace {

// Never destroyed: oneDNN may free a cached constant after static destructors ran.
struct State {
    std::mutex lock;
    std::unordered_map<void *, size_t> sizes;
    AllocationStats stats;
};

State &state() {
    static State *s = new State;
    return *s;
}

} // namespace

void count_allocation(void *p, size_t size, bool fresh) {
    State &s = state();
    std::lock_guard<std::mutex> guard(s.lock);
    s.sizes[p] = size;
    s.stats.current += size;
    s.stats.peak = std::max(s.stats.peak, s.stats.current);
    ++s.stats.allocations;
    if (fresh) ++s.stats.fresh;
}

size_t count_deallocation(void *p) {
    State &s = state();
    std::lock_guard<std::mutex> guard(s.lock);
    auto it = s.sizes.find(p);
    if (it == s.sizes.end()) return 0;
    const size_t size = it->second;
    s.stats.current -= size;
    s.sizes.erase(it);
    return size;
}

void count_cached(size_t bytes_now) {
    State &s = state();
    std::lock_guard<std::mutex> guard(s.lock);
    s.stats.cached = bytes_now;
}

namespace {

// Freed blocks above this many bytes in all are given back to the system.
size_t cache_limit() {
    static const size_t limit = [] {
        const char *given = std::getenv("ONEDNN_GRAPH_CACHE_BYTES");
        return given && *given ? static_cast<size_t>(std::strtoull(given, nullptr, 10)) : size_t(1) << 30;
    }();
    return limit;
}

} // namespace

void *BlockCache::take(size_t size, size_t alignment) {
    std::lock_guard<std::mutex> guard(lock_);
    auto it = free_blocks_.find({size, alignment});
    if (it == free_blocks_.end()) return nullptr;
    void *p = it->second;
    free_blocks_.erase(it);
    cached_bytes_ -= size;
    count_cached(cached_bytes_);
    return p;
}

std::vector<void *> BlockCache::make_room(size_t size) {
    std::vector<void *> given_up;
    std::lock_guard<std::mutex> guard(lock_);
    while (size <= cache_limit() && cached_bytes_ + size > cache_limit() && !free_blocks_.empty()) {
        auto largest = std::prev(free_blocks_.end());
        given_up.push_back(largest->second);
        cached_bytes_ -= largest->first.first;
        alignments_.erase(largest->second);
        free_blocks_.erase(largest);
    }
    if (!given_up.empty()) count_cached(cached_bytes_);
    return given_up;
}

void BlockCache::made(void *p, size_t alignment) {
    std::lock_guard<std::mutex> guard(lock_);
    alignments_[p] = alignment;
}

bool BlockCache::keep(void *p, size_t size) {
    std::lock_guard<std::mutex> guard(lock_);
    auto known = alignments_.find(p);
    if (known == alignments_.end()) return false;
    if (size > 0 && cached_bytes_ + size <= cache_limit()) {
        free_blocks_.emplace(std::make_pair(size, known->second), p);
        cached_bytes_ += size;
        count_cached(cached_bytes_);
        return true;
    }
    alignments_.erase(known);
    return false;
}

void BlockCache::unlock_in_forked_child() { new (&lock_) std::mutex(); }

void reset_allocator_locks_in_child() {
    new (&state().lock) std::mutex();
    block_cache().unlock_in_forked_child();
}

BlockCache &block_cache() {
    static BlockCache *c = new BlockCache;
    return *c;
}

#ifndef ONEDNN_GRAPH_SYCL
namespace {

void *allocate(size_t size, size_t alignment) {
    size = std::max<size_t>(size, 1);
    // posix_memalign wants a power of two no smaller than a pointer; oneDNN asks for 64.
    alignment = std::max(alignment, sizeof(void *));
    BlockCache &c = block_cache();
    if (void *p = c.take(size, alignment)) {
        count_allocation(p, size, false);
        return p;
    }
    for (void *old : c.make_room(size)) std::free(old); // (made room now, where the execution allocates)
    void *p = nullptr;
    if (posix_memalign(&p, alignment, size) != 0) return nullptr;
    c.made(p, alignment);
    count_allocation(p, size, true);
    return p;
}

void deallocate(void *p) {
    if (!p) return;
    if (!block_cache().keep(p, count_deallocation(p))) std::free(p);
}

} // namespace

dnnl::engine make_counted_engine(dnnl::engine::kind kind, size_t index) {
    static const dg::allocator *a = new dg::allocator(allocate, deallocate); // never destroyed,
    return dg::make_engine_with_allocator(kind, index, *a);                 // as State
}
#endif

AllocationStats allocation_stats() {
    State &s = state();
    std::lock_guard<std::mutex> guard(s.lock);
    return s.stats;
}

void reset_allocation_peak() {
    State &s = state();
    std::lock_guard<std::mutex> guard(s.lock);
    s.stats.peak = s.stats.current;
}

} // namespace onednn_graph
