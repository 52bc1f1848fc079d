// How a NumPy array must look to be a logical tensor's memory (see buffers.hpp).
#include "buffers.hpp"
#include "convert.hpp"

namespace onednn_graph {

namespace {

std::string join(const std::vector<int64_t> &v) {
    std::string s = "(";
    for (size_t i = 0; i < v.size(); ++i)
        s += (i ? ", " : "") + std::to_string(v[i]);
    return s + (v.size() == 1 ? ",)" : ")");
}

// onednn_graph._impl.arrays.DTYPES, looked up once when the module loads (an import
// per buffer costs microseconds on the hot path). Never released, so that no
// reference is dropped after the interpreter has finalized.
py::handle dtype_table;

// Bytes from the first to one past the last element of a non-empty array.
std::pair<uintptr_t, uintptr_t> bounds(const py::array &a) {
    auto lo = reinterpret_cast<uintptr_t>(a.data());
    auto hi = lo + static_cast<uintptr_t>(a.itemsize());
    for (py::ssize_t i = 0; i < a.ndim(); ++i) {
        const auto step = static_cast<intptr_t>(a.strides(i)) * static_cast<intptr_t>(a.shape(i) - 1);
        if (step < 0) lo += step; else hi += step;
    }
    return {lo, hi};
}

} // namespace


// The array must be exactly the memory the logical tensor describes: same
// shape and element strides for a strided layout (size-1 axes excepted, their
// stride never matters), or a contiguous block large enough for an opaque one.
void check_buffer(const dg::logical_tensor &lt, const py::array &a, const std::string &who) {
    const auto dt = lt.get_data_type();
    const auto itemsize = static_cast<py::ssize_t>(data_type_size(dt));
    if (itemsize == 0) throw py::value_error(who + ": dtype " + from_data_type(dt) + " has no buffer");
    // The same item size is not the same type (f32 and int32, bf16 and f16, byte
    // order): a dtype in the package's table must match exactly.
    const py::handle table = dtype_table;
    const std::string name = from_data_type(dt);
    if (table.contains(name) && !a.dtype().equal(table[py::str(name)]))
        throw py::type_error(who + ": array dtype " + std::string(py::str(a.dtype()))
                + " does not match the logical tensor's " + name);
    if (a.itemsize() != itemsize)
        throw py::type_error(who + ": array items are " + std::to_string(a.itemsize())
                + " bytes, the logical tensor's dtype " + from_data_type(dt) + " has "
                + std::to_string(itemsize));
    dims shape;
    try {
        shape = lt.get_dims();
    } catch (const dnnl::error &) {
        throw py::value_error(who + ": the logical tensor's rank is unknown; use the compiled "
                              "partition's query_logical_tensor() first");
    }
    for (auto d : shape)
        if (d < 0 || d == DNNL_GRAPH_UNKNOWN_DIM) throw py::value_error(who + ": the logical tensor's shape has unknown dims"
                "; use the compiled partition's query_logical_tensor() first");
    if (lt.get_layout_type() == layout_type::strided) {
        dims ashape(a.shape(), a.shape() + a.ndim());
        if (ashape != shape)
            throw py::value_error(who + ": array shape " + join(ashape)
                    + " differs from the logical tensor's " + join(shape));
        const auto strides = lt.get_strides();
        for (py::ssize_t i = 0; i < a.ndim(); ++i) {
            if (shape[i] <= 1) continue;
            if (a.strides(i) % itemsize != 0 || a.strides(i) / itemsize != strides[i])
                throw py::value_error(who + ": array strides (bytes) "
                        + join(dims(a.strides(), a.strides() + a.ndim()))
                        + " do not match the logical tensor's element strides " + join(strides));
        }
        return;
    }
    if (!(a.flags() & py::array::c_style))
        throw py::value_error(who + ": an array for a non-strided layout must be C-contiguous");
    if (static_cast<size_t>(a.nbytes()) < lt.get_mem_size())
        throw py::value_error(who + ": array holds " + std::to_string(a.nbytes())
                + " bytes, the logical tensor needs " + std::to_string(lt.get_mem_size()));
}


BufferSpec buffer_spec(const dg::logical_tensor &lt) {
    BufferSpec spec;
    if (lt.get_layout_type() != layout_type::strided) return spec;
    const std::string name = from_data_type(lt.get_data_type());
    const py::handle table = dtype_table;
    if (!table.contains(name)) return spec;
    dims shape;
    try {
        shape = lt.get_dims();
    } catch (const dnnl::error &) {
        return spec; // unknown rank: check_buffer says so
    }
    spec.itemsize = static_cast<py::ssize_t>(data_type_size(lt.get_data_type()));
    spec.dtype = table[py::str(name)].ptr();
    const auto strides = lt.get_strides();
    for (size_t i = 0; i < shape.size(); ++i) {
        if (shape[i] < 0) return spec; // unknown dims: check_buffer says so
        spec.strides.push_back(shape[i] > 1 ? strides[i] * spec.itemsize : 0);
    }
    spec.shape = std::move(shape);
    spec.fast = true;
    return spec;
}

bool fits(const BufferSpec &spec, const py::array &a, bool writes) {
    if (!spec.fast) return false;
    const auto *raw = py::detail::array_proxy(a.ptr());
    if (reinterpret_cast<PyObject *>(raw->descr) != spec.dtype) return false;
    if (raw->nd != static_cast<int>(spec.shape.size())) return false;
    if (writes && !a.writeable()) return false;
    for (int i = 0; i < raw->nd; ++i) {
        if (raw->dimensions[i] != spec.shape[i]) return false;
        if (spec.strides[i] != 0 && raw->strides[i] != spec.strides[i]) return false;
    }
    return true;
}

bool overlaps(const py::array &a, const py::array &b) {
    if (a.size() == 0 || b.size() == 0) return false;
    const auto x = bounds(a), y = bounds(b);
    if (x.second <= y.first || y.second <= x.first) return false;
    return py::module_::import("numpy").attr("shares_memory")(a, b).cast<bool>();
}

PyObject *table_dtype(const char *name) {
    const py::handle table = dtype_table;
    return table[py::str(name)].ptr(); // the table holds it for the process's life
}

bool has_dtype(const py::array &a, PyObject *dtype) {
    // The same dtype object in the common case; an equal one (another instance) otherwise.
    const auto *raw = py::detail::array_proxy(a.ptr());
    return reinterpret_cast<PyObject *>(raw->descr) == dtype || a.dtype().equal(py::handle(dtype));
}

std::string table_dtype_name(const py::array &a) {
    const py::handle table = dtype_table;
    for (const auto &item : py::reinterpret_borrow<py::dict>(table))
        if (a.dtype().equal(item.second)) return item.first.cast<std::string>();
    return py::str(a.dtype());
}

void load_dtype_table() {
    dtype_table = py::object(py::module_::import("onednn_graph._impl.arrays").attr("DTYPES")).release();
}

} // namespace onednn_graph
