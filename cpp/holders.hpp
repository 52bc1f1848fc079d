// The C++ objects behind Op, CompiledPartition and Tensor. Each keeps what the
// oneDNN handle alone cannot give back (an op's attributes) or must not outlive
// (a tensor's buffer, a compiled partition's engine).
#pragma once
#include "common.hpp"

namespace onednn_graph {

struct Op {
    dg::op op;
    size_t id;
    std::string kind;
    std::string name;
    std::vector<dg::logical_tensor> inputs;
    std::vector<dg::logical_tensor> outputs;
    py::dict attrs; // as set, for reading back: oneDNN has no attribute getter
};

struct CompiledPartition {
    dg::compiled_partition compiled;
    // A counted handle: oneDNN's compiled partition only borrows the engine,
    // and execute() needs a stream on this very engine.
    dnnl::engine engine;
    std::vector<dg::logical_tensor> inputs;  // as given to compile()
    std::vector<dg::logical_tensor> outputs; // as given to compile()
};

struct Tensor {
    dg::logical_tensor logical;
    py::array array; // owns the memory oneDNN reads or writes
    dg::tensor tensor;
};

// Checks that `a` is exactly the memory `lt` describes (item size, shape and
// element strides, or a large enough C-contiguous block for an opaque
// layout); `who` starts the error message. Defined in bind_tensor.cpp.
void check_buffer(const dg::logical_tensor &lt, const py::array &a, const std::string &who);

} // namespace onednn_graph
