// dnnl::error -> onednn_graph.Error: the one place oneDNN statuses get names.
#pragma once
#include "common.hpp"

#include <stdexcept>

namespace onednn_graph {

// oneDNN's name for a status ("invalid_arguments", "unimplemented", ...).
const char *status_name(dnnl_status_t status);

// Raised by this extension when it refuses a call for a reason oneDNN itself
// would report with `status`; translated exactly like dnnl::error. (dnnl::error
// only borrows its message pointer, so it cannot carry a composed message.)
struct status_error : std::runtime_error {
    dnnl_status_t status;
    status_error(dnnl_status_t s, const std::string &message)
        : std::runtime_error(message), status(s) {}
};

} // namespace onednn_graph
