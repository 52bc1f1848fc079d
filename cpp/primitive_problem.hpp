// A convolution-family problem as oneDNN's primitive API takes it, for the probes that
// build one (kernel_probe.cpp: which implementation; epilogue_probe.cpp: how it applies
// a bias): dtype names as memory data types, and the dims checked.
#pragma once
#include "common.hpp"
#include "convert.hpp"

namespace onednn_graph {

// The Graph API's dtype enum and the primitive API's share their values.
inline dnnl::memory::data_type memory_type(const std::string &name) {
    return static_cast<dnnl::memory::data_type>(to_data_type(name));
}

// src and dst (N, C, spatial...), weights (O, I, spatial...) or (G, O/G, I/G, spatial...),
// one stride, dilation and pad per spatial axis; ValueError naming `who` otherwise.
inline void check_problem(const std::string &who, const dims &src, const dims &weights, const dims &dst,
        const dims &strides, const dims &dilates, const dims &pads_l, const dims &pads_r) {
    const size_t spatial = src.size() < 3 ? 0 : src.size() - 2;
    if (src.size() < 3 || dst.size() != src.size()
            || (weights.size() != src.size() && weights.size() != src.size() + 1)
            || strides.size() != spatial || dilates.size() != spatial || pads_l.size() != spatial
            || pads_r.size() != spatial)
        throw py::value_error(who + ": src and dst are (N, C, spatial...), weights (O, I, spatial...) "
                "or (G, O/G, I/G, spatial...), and strides, dilates and pads have one value per "
                "spatial axis");
}

} // namespace onednn_graph
