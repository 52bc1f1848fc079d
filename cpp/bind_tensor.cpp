// Tensor: a zero-copy view of a NumPy array's buffer as a oneDNN tensor. The
// Tensor holds the array (so the memory outlives every use by oneDNN) and a
// reference to the engine; numpy() hands back a view whose base is the Tensor.
#include "common.hpp"
#include "convert.hpp"
#include "holders.hpp"

namespace onednn_graph {

namespace {

std::string join(const std::vector<int64_t> &v) {
    std::string s = "(";
    for (size_t i = 0; i < v.size(); ++i)
        s += (i ? ", " : "") + std::to_string(v[i]);
    return s + (v.size() == 1 ? ",)" : ")");
}

// onednn_graph._dtypes.DTYPES, looked up once when the module loads (an import
// per buffer costs microseconds on the hot path). Never released, so that no
// reference is dropped after the interpreter has finalized.
py::handle dtype_table;

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

void bind_tensor(py::module_ &m) {
    dtype_table = py::object(py::module_::import("onednn_graph._dtypes").attr("DTYPES")).release();
    py::class_<Tensor>(m, "Tensor", "A logical tensor bound to an array's memory, without a copy.")
            .def(py::init([](const dg::logical_tensor &lt, const dnnl::engine &engine, py::array array) {
                check_buffer(lt, array, "Tensor");
                // oneDNN reads and writes through this pointer; writes to a
                // read-only array are refused in execute(), before they happen.
                void *data = const_cast<void *>(array.data());
                return Tensor {lt, array, dg::tensor(lt, engine, data)};
            }),
                    py::arg("logical_tensor"), py::arg("engine"), py::arg("array"),
                    py::keep_alive<1, 3>())
            .def_readonly("logical_tensor", &Tensor::logical)
            .def_readonly("array", &Tensor::array, "The array whose memory the tensor uses.")
            .def("numpy", [](py::object self) {
                const auto &t = self.cast<const Tensor &>();
                const auto &a = t.array;
                // A view, not a copy: its base is this Tensor, which holds `a`.
                py::array view(a.dtype(), dims(a.shape(), a.shape() + a.ndim()),
                        dims(a.strides(), a.strides() + a.ndim()), a.data(), self);
                // pybind11 marks views of non-array bases writeable; keep the
                // caller's read-only promise.
                if (!a.writeable()) view.attr("flags").attr("writeable") = false;
                return view;
            }, "A NumPy view of the tensor's memory (no copy).");
}

} // namespace onednn_graph
