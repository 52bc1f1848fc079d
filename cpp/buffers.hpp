// How a NumPy array must look to be the memory of a logical tensor: the full
// check with messages (check_buffer), and a precomputed form of it that the hot
// path (CompiledPartition.execute_arrays) compares without calling oneDNN.
#pragma once
#include "common.hpp"

namespace onednn_graph {

// Checks that `a` is exactly the memory `lt` describes (dtype, item size, shape
// and element strides, or a large enough C-contiguous block for an opaque
// layout); `who` starts the error message.
void check_buffer(const dg::logical_tensor &lt, const py::array &a, const std::string &who);

// What check_buffer would accept, taken from a logical tensor once. Only
// strided tensors of a dtype in the package's table get one (`fast`); the hot
// path sends every other case, and every mismatch, to check_buffer.
struct BufferSpec {
    bool fast = false;
    PyObject *dtype = nullptr; // borrowed from onednn_graph._impl.arrays.DTYPES, which is never released
    py::ssize_t itemsize = 0;
    dims shape, strides;       // strides in bytes; axes of extent <= 1 hold 0 (never compared)
};
BufferSpec buffer_spec(const dg::logical_tensor &lt);

// True when `a` matches `spec` exactly (the same dtype object, shape, strides;
// writeable if `writes`): then check_buffer would pass it too.
bool fits(const BufferSpec &spec, const py::array &a, bool writes);

// True when `o` is exactly a numpy.ndarray (no subclass).
inline bool exact_array(py::handle o) {
    return Py_TYPE(o.ptr()) == reinterpret_cast<PyTypeObject *>(py::detail::npy_api::get().PyArray_Type_);
}

// True when `a` and `b` share memory: a bounds test first, numpy.shares_memory
// (exact) only when the bounds meet.
bool overlaps(const py::array &a, const py::array &b);

// The dtype the package's table names `name` ("f32", "bf16", ...), borrowed from the
// table, which is never released: look it up once and keep the pointer.
PyObject *table_dtype(const char *name);

// Whether `a` has `dtype` (a table_dtype).
bool has_dtype(const py::array &a, PyObject *dtype);

// The table's name of `a`'s dtype, or NumPy's name of it when the table has none.
std::string table_dtype_name(const py::array &a);

// Looks up onednn_graph._impl.arrays.DTYPES; called once when the module loads.
void load_dtype_table();

} // namespace onednn_graph
