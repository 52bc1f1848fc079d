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
    dnnl::engine engine; // a counted handle: oneDNN's compiled partition only borrows it
    std::vector<dg::logical_tensor> inputs;  // as given to compile()
    std::vector<dg::logical_tensor> outputs; // as given to compile()
};

struct Tensor {
    dg::logical_tensor logical;
    py::array array; // owns the memory oneDNN reads or writes
    dg::tensor tensor;
};

} // namespace onednn_graph
