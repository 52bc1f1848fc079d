// Tensor: a zero-copy view of a NumPy array's buffer as a oneDNN tensor. The
// Tensor holds the array (so the memory outlives every use by oneDNN) and a
// reference to the engine; numpy() hands back a view whose base is the Tensor.
#include "common.hpp"
#include "convert.hpp"
#include "buffers.hpp"
#include "holders.hpp"

namespace onednn_graph {

void bind_tensor(py::module_ &m) {
    load_dtype_table();
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
