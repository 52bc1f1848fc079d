// The hot path of the functional API and of compiled ops: a cached call run on
// the caller's own arrays in one native call.
//
// A NativeCall checks every array exactly as execute_arrays does, but a refusal
// is not an error here: it returns None, nothing has run, and the package's
// Python path (which converts a torch tensor, copies what oneDNN cannot
// describe, or names the argument at fault) takes the call over.
//
// DirectCall runs one compiled partition, on the whole batch or (compiled for `rows`
// samples) once per part of it; ChainCall (chain_call.cpp) runs the
// partitions of an f32 chain (TypeCast, op in f32, TypeCast) on f32 buffers it
// keeps per thread.
#pragma once
#include "holders.hpp"

namespace onednn_graph {

struct NativeCall {
    virtual ~NativeCall() = default;
    // `out` (an exact ndarray) or a new result after oneDNN wrote it; None
    // when any array was refused, or `arrays` (a tuple or list) has another length.
    virtual py::object run(dnnl::stream &stream, py::handle arrays, py::handle out) const = 0;
};

struct DirectCall : NativeCall {
    DirectCall(py::object partition, const CompiledPartition *compiled, std::vector<size_t> order,
            std::vector<py::ssize_t> shape, py::dtype dtype, std::vector<size_t> batched, py::ssize_t rows)
        : partition(std::move(partition))
        , compiled(compiled)
        , order(std::move(order))
        , shape(std::move(shape))
        , dtype(std::move(dtype))
        , batched(std::move(batched))
        , rows(rows) {}

    py::object partition;                       // the CompiledPartition object: keeps it alive
    const CompiledPartition *compiled = nullptr; // ... and the C++ object inside it
    std::vector<size_t> order;                  // op input j is the caller's array order[j]; empty: as given
    std::vector<py::ssize_t> shape;             // of a new result
    py::dtype dtype;                            // of a new result
    std::vector<size_t> batched;                // op inputs whose first axis is the batch (with `rows`)
    py::ssize_t rows = 0;                       // samples per part the partition was compiled for (0: all)

    py::object run(dnnl::stream &stream, py::handle arrays, py::handle out) const override;
};

// A new result only reserves memory: np.empty's pages are touched by oneDNN.
inline py::object result_or_out(py::handle out, const py::dtype &dtype, const std::vector<py::ssize_t> &shape) {
    return out.is_none() ? py::object(py::array(dtype, shape)) : py::reinterpret_borrow<py::object>(out);
}

} // namespace onednn_graph
