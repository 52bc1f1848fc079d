// Which implementation oneDNN's primitive API picks, on this CPU, for one
// convolution-family problem: the question the Graph API cannot answer before
// it runs. The Graph API's dnnl backend builds exactly these primitive
// descriptors when it compiles ConvTranspose, its backward ops, Convolution and
// its backward ops (3.2: graph/backend/dnnl/op_executable.cpp): every memory
// format "any", forward ops for inference (ConvTranspose) or training
// (Convolution), backward ops after a forward_training hint, which must exist
// too. The answer is the implementation's name ("brgconv:avx512_core",
// "conv:any+ref:any", ...); a problem no implementation takes raises Error.
//
// reorder_impl asks the same of a TypeCast, which the backend compiles as a
// reorder between the two strided memory descriptors: which reorder oneDNN runs
// ("jit:uni", or its scalar "simple:any") decides whether the package converts
// instead (_impl/casts.py).
#include "primitive_problem.hpp"

namespace onednn_graph {

namespace {

using tag = dnnl::memory::format_tag;
using prop = dnnl::prop_kind;
using alg = dnnl::algorithm;

const dnnl::engine &probe_engine() {
    // The primitive API's own CPU engine: creating descriptors allocates nothing.
    static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    return engine;
}

// The implementation of one primitive of a family: Fwd, BwdData and BwdWeights
// are dnnl::(de)convolution_forward, _backward_data and _backward_weights.
template <typename Fwd, typename BwdData, typename BwdWeights>
std::string family_impl(const std::string &pass, dnnl::prop_kind forward, dnnl::algorithm a,
        const dnnl::memory::desc &s, const dnnl::memory::desc &w, const dnnl::memory::desc &d,
        const dims &strides, const dims &dilates, const dims &pads_l, const dims &pads_r) {
    const auto &e = probe_engine();
    if (pass == "forward")
        return typename Fwd::primitive_desc(e, forward, a, s, w, d, strides, dilates, pads_l, pads_r)
                .impl_info_str();
    const typename Fwd::primitive_desc hint(e, prop::forward_training, a, s, w, d, strides, dilates,
            pads_l, pads_r);
    if (pass == "backward_data")
        return typename BwdData::primitive_desc(e, a, s, w, d, strides, dilates, pads_l, pads_r, hint)
                .impl_info_str();
    return typename BwdWeights::primitive_desc(e, a, s, w, d, strides, dilates, pads_l, pads_r, hint)
            .impl_info_str();
}

std::string probe(const std::string &primitive, const std::string &dtype, const dims &src,
        const dims &weights, const dims &dst, const dims &strides, const dims &dilates,
        const dims &pads_l, const dims &pads_r) {
    const auto dt = memory_type(dtype);
    const dnnl::memory::desc s(src, dt, tag::any), w(weights, dt, tag::any), d(dst, dt, tag::any);
    const auto split = primitive.find('_');
    const std::string family = primitive.substr(0, split);
    const std::string pass = split == std::string::npos ? "" : primitive.substr(split + 1);
    if (pass == "forward" || pass == "backward_data" || pass == "backward_weights") {
        // The backend compiles ConvTranspose for inference, Convolution for training.
        if (family == "deconvolution")
            return family_impl<dnnl::deconvolution_forward, dnnl::deconvolution_backward_data,
                    dnnl::deconvolution_backward_weights>(pass, prop::forward_inference,
                    alg::deconvolution_direct, s, w, d, strides, dilates, pads_l, pads_r);
        if (family == "convolution")
            return family_impl<dnnl::convolution_forward, dnnl::convolution_backward_data,
                    dnnl::convolution_backward_weights>(pass, prop::forward_training,
                    alg::convolution_direct, s, w, d, strides, dilates, pads_l, pads_r);
    }
    throw py::value_error("primitive must be (de)convolution_forward, _backward_data or "
                          "_backward_weights, got '" + primitive + "'");
}

std::string reorder_probe(const std::string &from, const std::string &to, const dims &shape,
        const dims &from_strides, const dims &to_strides) {
    const dnnl::memory::desc s(shape, memory_type(from), from_strides), d(shape, memory_type(to), to_strides);
    return dnnl::reorder::primitive_desc(probe_engine(), s, probe_engine(), d).impl_info_str();
}

} // namespace

void bind_kernel_probe(py::module_ &m) {
    m.def("primitive_impl", [](const std::string &primitive, const std::string &dtype,
                                    const dims &src, const dims &weights, const dims &dst,
                                    const dims &strides, const dims &dilates, const dims &pads_l,
                                    const dims &pads_r) {
        check_problem("primitive_impl", src, weights, dst, strides, dilates, pads_l, pads_r);
        return without_gil([&] {
            return probe(primitive, dtype, src, weights, dst, strides, dilates, pads_l, pads_r);
        });
    }, py::arg("primitive"), py::arg("dtype"), py::arg("src"), py::arg("weights"),
            py::arg("dst"), py::arg("strides"), py::arg("dilates"), py::arg("pads_l"),
            py::arg("pads_r"),
            "The name of the implementation oneDNN's primitive API picks for a convolution-"
            "family problem on this CPU, as the Graph API's backend asks for it (formats "
            "'any'; dilates counted from 0, as the primitive API counts them). Raises Error "
            "(status unimplemented, ...) when no implementation takes it.");
    m.def("reorder_impl", [](const std::string &source, const std::string &target, const dims &shape,
                                   const dims &source_strides, const dims &target_strides) {
        if (source_strides.size() != shape.size() || target_strides.size() != shape.size())
            throw py::value_error("reorder_impl: the strides need one value per axis of shape");
        return without_gil([&] { return reorder_probe(source, target, shape, source_strides, target_strides); });
    }, py::arg("source"), py::arg("target"), py::arg("shape"), py::arg("source_strides"),
            py::arg("target_strides"),
            "The name of the reorder oneDNN's primitive API picks on this CPU to convert a "
            "strided `source`-dtype tensor into a strided `target`-dtype one (element strides), "
            "as the Graph API's backend runs a TypeCast. Raises Error when none takes it.");
}

} // namespace onednn_graph
