// The allocator of the package's engines. oneDNN's Graph API takes its
// temporary scratchpad (internal reorders included) and cached constants
// through the engine's allocator, so counting here tells how much memory
// oneDNN itself took during a call: the benchmark's "no hidden copies" check.
#pragma once
#include "common.hpp"

#include <cstddef>

namespace onednn_graph {

// One allocator for every engine the package makes; it lives as long as the process.
const dg::allocator &counting_allocator();

struct AllocationStats {
    size_t current = 0;     // bytes held now
    size_t peak = 0;        // most bytes held at once since the last reset
    size_t allocations = 0; // calls since the process started
};

AllocationStats allocation_stats();
void reset_allocation_peak(); // the peak becomes the current

} // namespace onednn_graph
