// The package's conversion of one NumPy array into another between f32 and bf16 /
// f16 (cast_kernels.hpp says why and to what rule): arrays of any strides, read and
// written where they lie, on the threads oneDNN uses, without the GIL.
#pragma once
#include "cast_kernels.hpp"
#include "common.hpp"

namespace onednn_graph {

// The path this process converts on: the widest this CPU has that oneDNN's own ISA
// (ONEDNN_MAX_CPU_ISA included) allows, so that a cap lowers both alike.
CastPath default_cast_path();

// The most axes of extent > 1 a conversion walks after merging those that step
// through memory together (a tensor of oneDNN has at most 12 axes).
constexpr int max_cast_axes = 16;

// One axis of a conversion's walk: extent and byte strides in both arrays.
struct CastAxis {
    int64_t extent, src_stride, dst_stride;
};

// What one conversion reads and writes, taken from checked arrays (with the GIL);
// running it needs no Python object and allocates nothing.
struct CastJob {
    CastPair pair = CastPair::bf16_to_f32;
    const char *src = nullptr;
    char *dst = nullptr;
    int64_t total = 0; // elements
    // The walk, outermost first; the last axis is a row (merged axes: a C-contiguous
    // pair of arrays, or two laid out in one same order, is one row).
    int axes = 0;
    CastAxis axis[max_cast_axes];
    // The last two axes are one row that the destination holds densely and the
    // source interleaves or holds in short pieces: it steps through the two by its
    // own strides (a depth-to-space: kernel positions or output phases of a row).
    // Converted as one gathered row, not as rows of the inner axis's few elements.
    bool tile = false;
    // The last two axes swap between the arrays (f32 only): the outer one is dense in the
    // source, the inner one in the destination, both long: an NCX <-> NXC rearrangement,
    // copied a square block at a time (transpose_block), not gathered element by element.
    bool transpose = false;
};

// Checks `src` and `dst` for a conversion of `pair` and describes it: both numpy
// arrays of one shape, of the pair's dtypes, `dst` writeable and (unless the caller
// knows one of them to be its own array: `disjoint`) sharing no memory with `src`.
// Throws TypeError / ValueError starting with `who` otherwise.
// (Written into `job`: a CastJob is a few hundred bytes, and the hot path makes one
// per cast and call.)
void cast_job(CastJob &job, CastPair pair, py::handle src, py::handle dst, const char *who,
        bool disjoint = false);

// Runs `job` on up to `threads` threads (0: as many as oneDNN would use), on
// `path`. Call it without the GIL, on the thread oneDNN work runs on.
void run_cast(const CastJob &job, int threads, CastPath path);

// A conversion as a step of an f32 chain (ChainCall, _impl/as_f32.py): the pair
// and the thread count of the chain's op.
struct Cast {
    CastPair pair;
    int threads = 0;
};

} // namespace onednn_graph
