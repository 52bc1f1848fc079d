// Included first by every file of the extension: pybind11, oneDNN Graph and the
// declarations the binding files share.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <oneapi/dnnl/dnnl.hpp>
#include <oneapi/dnnl/dnnl_graph.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace py = pybind11;

namespace onednn_graph {

namespace dg = dnnl::graph;
using dims = std::vector<int64_t>;

// One bind_* function per bound object, called from module.cpp in this order.
void bind_errors(py::module_ &m);
void bind_version(py::module_ &m);
void bind_engine(py::module_ &m);
void bind_logical_tensor(py::module_ &m);
void bind_op(py::module_ &m);
void bind_graph(py::module_ &m);
void bind_compiled_partition(py::module_ &m);
void bind_tensor(py::module_ &m);

} // namespace onednn_graph
