// DirectCall: a compiled op run on the caller's own arrays in one native call.
// It checks every array exactly as execute_arrays does, but a refusal is not an
// error here: it returns None, nothing has run, and the package's Python path
// (which converts a torch tensor, copies what oneDNN cannot describe, or names
// the argument at fault) takes the call over.
#pragma once
#include "holders.hpp"

namespace onednn_graph {

struct DirectCall {
    py::object partition;                       // the CompiledPartition object: keeps it alive
    const CompiledPartition *compiled = nullptr; // ... and the C++ object inside it
    std::vector<size_t> order;                  // op input j is the caller's array order[j]; empty: as given
    std::vector<py::ssize_t> shape;             // of a new result
    py::dtype dtype;                            // of a new result

    // `out` (an exact ndarray) or a new result after oneDNN wrote it; None
    // when any array was refused, or `arrays` (a tuple or list) has another length.
    py::object run(dnnl::stream &stream, py::handle arrays, py::handle out) const;
};

} // namespace onednn_graph
