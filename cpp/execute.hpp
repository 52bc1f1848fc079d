// Executing a compiled partition on NumPy arrays: what CompiledPartition's
// execute_arrays and the direct calls of compiled ops (direct_call.cpp) share.
#pragma once
#include "holders.hpp"

namespace onednn_graph {

// Borrowed arrays in the order the partition was compiled with.
struct ArrayList {
    PyObject *const *items;
    size_t size;
};

// The items of a sequence made by PySequence_Fast (a list or a tuple).
inline ArrayList array_list(const py::object &fast) {
    return {PySequence_Fast_ITEMS(fast.ptr()), static_cast<size_t>(PySequence_Fast_GET_SIZE(fast.ptr()))};
}

// Rows [start, start + rows) of array `a`'s first axis: a view, which holds `a`
// (a call whose batch runs in parts: DirectCall, ChainCall).
py::object first_rows(PyObject *a, py::ssize_t start, py::ssize_t rows);

// The batch of a call run in parts of `rows` samples: the first axis of `target`
// and of each of `inputs` at positions `batched`, or -1 where they differ, `target`
// has none, or `rows` does not divide it.
py::ssize_t parted_batch(PyObject *target, ArrayList inputs, const std::vector<size_t> &batched, py::ssize_t rows);

// Refuses (ValueError, prefixed by `who`) a stream of another engine object
// than the partition's: oneDNN 3.2 fails on it (invalid_arguments), even for
// an engine of the same kind and index.
void check_stream(const CompiledPartition &c, const dnnl::stream &stream, const char *who);

// The arrays of one execution, checked and held (and, from the low-level API, the
// caller's oneDNN tensors over them).
struct CheckedArrays {
    std::vector<py::array> inputs, outputs; // held while oneDNN runs without the GIL
    // The caller's own tensors (CompiledPartition.execute); empty for arrays, which
    // run on the partition's own tensors (CompiledPartition::tensors).
    std::vector<dg::tensor> input_tensors, output_tensors;
};

// Refuses (ValueError) an output that shares memory with an input, unless the
// compiled partition lists that pair (input id, output id) as in place: oneDNN
// would read what it writes. Arrays come in the order of their logical tensors.
void check_no_overlap(const CompiledPartition &c, const std::vector<dg::logical_tensor> &in_lts,
        const std::vector<py::array> &ins, const std::vector<dg::logical_tensor> &out_lts,
        const std::vector<py::array> &outs);

// Checks every array against the compiled logical tensors (dtype, shape,
// strides; outputs writeable and sharing no memory with an input unless oneDNN
// computes that pair in place). Raises TypeError or ValueError naming the array
// (prefixed by `who`), before anything runs.
CheckedArrays check_arrays(const CompiledPartition &c, const char *who, ArrayList inputs, ArrayList outputs);

// Runs the checked arrays on `stream` (of the partition's engine), without the
// GIL, one execution of a compiled partition at a time.
void run_checked(const CompiledPartition &c, dnnl::stream &stream, const CheckedArrays &arrays);

// run_checked's execution alone, for a caller that has released the GIL and is on
// the thread oneDNN work runs on (on_onednn_thread) already: a chain of steps.
void execute_checked(const CompiledPartition &c, dnnl::stream &stream, const CheckedArrays &arrays);

} // namespace onednn_graph
