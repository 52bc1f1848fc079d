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
#include <type_traits>
#include <vector>

namespace py = pybind11;

namespace onednn_graph {

namespace dg = dnnl::graph;
using dims = std::vector<int64_t>;

// Runs f() without the GIL and takes the GIL back outside any destructor.
// At interpreter exit CPython (< 3.14) ends a daemon thread that tries to take
// the GIL with pthread_exit, which unwinds the thread's stack; leaving
// py::gil_scoped_release's noexcept destructor that way calls std::terminate.
// The flag keeps that unwinding (caught by catch (...)) from retaking the GIL
// twice; it is rethrown, as forced unwinding must be.
template <typename F>
auto without_gil(F &&f) -> decltype(f()) {
    PyThreadState *state = PyEval_SaveThread();
    bool restored = false;
    try {
        if constexpr (std::is_void_v<decltype(f())>) {
            f();
            restored = true;
            PyEval_RestoreThread(state);
        } else {
            auto result = f();
            restored = true;
            PyEval_RestoreThread(state);
            return result;
        }
    } catch (...) {
        if (!restored) PyEval_RestoreThread(state);
        throw;
    }
}

// One bind_* function per bound object, called from module.cpp in this order.
void bind_errors(py::module_ &m);
void bind_version(py::module_ &m);
void bind_engine(py::module_ &m);
void bind_logical_tensor(py::module_ &m);
void bind_op(py::module_ &m);
void bind_graph(py::module_ &m);
void bind_compiled_partition(py::module_ &m);
void bind_tensor(py::module_ &m);
void bind_call_signature(py::module_ &m);
void bind_direct_call(py::module_ &m);
void bind_chain_call(py::module_ &m);
void bind_call_cache(py::module_ &m);
void bind_kernel_probe(py::module_ &m);
void bind_epilogue_probe(py::module_ &m);
void bind_onednn_thread(py::module_ &m);
void bind_cast(py::module_ &m);

} // namespace onednn_graph
