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

// What one conversion reads and writes, taken from checked arrays (with the GIL);
// running it needs no Python object.
struct CastJob {
    CastPair pair;
    const char *src = nullptr;
    char *dst = nullptr;
    dims shape, src_strides, dst_strides; // strides in bytes
};

// Checks `src` and `dst` for a conversion of `pair` and describes it: both numpy
// arrays of one shape, of the pair's dtypes, `dst` writeable and sharing no memory
// with `src`. Throws TypeError / ValueError starting with `who` otherwise.
CastJob cast_job(CastPair pair, py::handle src, py::handle dst, const std::string &who);

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
