// dnnl::error -> onednn_graph.Error (a RuntimeError defined in errors.py) with
// .status set to the oneDNN status name. Registered once, for every binding.
#include "errors.hpp"

namespace onednn_graph {

const char *status_name(dnnl_status_t status) {
    switch (status) {
        case dnnl_success: return "success";
        case dnnl_out_of_memory: return "out_of_memory";
        case dnnl_invalid_arguments: return "invalid_arguments";
        case dnnl_unimplemented: return "unimplemented";
        case dnnl_last_impl_reached: return "last_impl_reached";
        case dnnl_runtime_error: return "runtime_error";
        case dnnl_not_required: return "not_required";
        case dnnl_invalid_graph: return "invalid_graph";
        case dnnl_invalid_graph_op: return "invalid_graph_op";
        case dnnl_invalid_shape: return "invalid_shape";
        case dnnl_invalid_data_type: return "invalid_data_type";
        default: return "unknown";
    }
}

// Error lives in Python (errors.py) so that users can catch and subclass it
// like any exception; it is looked up when raised, under the GIL.
static void raise_error(const char *message, dnnl_status_t status) {
    py::object cls = py::module_::import("onednn_graph.errors").attr("Error");
    py::object exc = cls(std::string(message), status_name(status));
    PyErr_SetObject(cls.ptr(), exc.ptr());
}

void bind_errors(py::module_ &m) {
    m.def("status_name", [](int status) {
        return status_name(static_cast<dnnl_status_t>(status));
    }, "oneDNN's name for a numeric status.");
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const dnnl::error &e) {
            raise_error(e.what(), e.status);
        } catch (const status_error &e) {
            raise_error(e.what(), e.status);
        }
    });
}

} // namespace onednn_graph
