// See allocator.hpp. A lock and a size map: oneDNN allocates a few buffers per
// execution at most, so the bookkeeping is noise next to the kernels.
#include "allocator.hpp"

#include <algorithm>
#include <cstdlib>
#include <mutex>
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

void *allocate(size_t size, size_t alignment) {
    void *p = nullptr;
    // posix_memalign wants a power of two no smaller than a pointer; oneDNN asks for 64.
    if (posix_memalign(&p, std::max(alignment, sizeof(void *)), size == 0 ? 1 : size) != 0) return nullptr;
    State &s = state();
    std::lock_guard<std::mutex> guard(s.lock);
    s.sizes[p] = size;
    s.stats.current += size;
    s.stats.peak = std::max(s.stats.peak, s.stats.current);
    ++s.stats.allocations;
    return p;
}

void deallocate(void *p) {
    if (!p) return;
    {
        State &s = state();
        std::lock_guard<std::mutex> guard(s.lock);
        auto it = s.sizes.find(p);
        if (it != s.sizes.end()) {
            s.stats.current -= it->second;
            s.sizes.erase(it);
        }
    }
    std::free(p);
}

} // namespace

const dg::allocator &counting_allocator() {
    static const dg::allocator *a = new dg::allocator(allocate, deallocate); // never destroyed,
    return *a; // as State
}

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
