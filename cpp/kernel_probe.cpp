// Which implementation oneDNN's primitive API picks, on this CPU, for one
// convolution-family problem: the question the Graph API cannot answer before
// it runs. The Graph API's dnnl backend builds exactly these primitive
// descriptors when it compiles ConvTranspose, its backward ops, Convolution and
// its backward ops (3.2: graph/backend/dnnl/op_executable.cpp): every memory
// format "any", forward ops for inference (ConvTranspose) or training
// (Convolution), backward ops after a forward_training hint, which must exist
// too. The answer is the implementation's name ("brgconv:avx512_core",
// "conv:any+ref:any", ...); a problem no implementation takes raises Error.
#include "common.hpp"
#include "convert.hpp"

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

std::string probe(const std::string &primitive, const std::string &dtype, const dims &src,
        const dims &weights, const dims &dst, const dims &strides, const dims &dilates,
        const dims &pads_l, const dims &pads_r) {
    const auto dt = static_cast<dnnl::memory::data_type>(to_data_type(dtype));
    const dnnl::memory::desc s(src, dt, tag::any), w(weights, dt, tag::any), d(dst, dt, tag::any);
    const auto &e = probe_engine();
    if (primitive == "deconvolution_forward")
        return dnnl::deconvolution_forward::primitive_desc(e, prop::forward_inference,
                alg::deconvolution_direct, s, w, d, strides, dilates, pads_l, pads_r)
                .impl_info_str();
    if (primitive == "convolution_forward")
        return dnnl::convolution_forward::primitive_desc(e, prop::forward_training,
                alg::convolution_direct, s, w, d, strides, dilates, pads_l, pads_r)
                .impl_info_str();
    if (primitive.rfind("deconvolution_", 0) == 0) {
        const dnnl::deconvolution_forward::primitive_desc hint(e, prop::forward_training,
                alg::deconvolution_direct, s, w, d, strides, dilates, pads_l, pads_r);
        if (primitive == "deconvolution_backward_data")
            return dnnl::deconvolution_backward_data::primitive_desc(e,
                    alg::deconvolution_direct, s, w, d, strides, dilates, pads_l, pads_r, hint)
                    .impl_info_str();
        if (primitive == "deconvolution_backward_weights")
            return dnnl::deconvolution_backward_weights::primitive_desc(e,
                    alg::deconvolution_direct, s, w, d, strides, dilates, pads_l, pads_r, hint)
                    .impl_info_str();
    } else if (primitive.rfind("convolution_", 0) == 0) {
        const dnnl::convolution_forward::primitive_desc hint(e, prop::forward_training,
                alg::convolution_direct, s, w, d, strides, dilates, pads_l, pads_r);
        if (primitive == "convolution_backward_data")
            return dnnl::convolution_backward_data::primitive_desc(e,
                    alg::convolution_direct, s, w, d, strides, dilates, pads_l, pads_r, hint)
                    .impl_info_str();
        if (primitive == "convolution_backward_weights")
            return dnnl::convolution_backward_weights::primitive_desc(e,
                    alg::convolution_direct, s, w, d, strides, dilates, pads_l, pads_r, hint)
                    .impl_info_str();
    }
    throw py::value_error("primitive must be (de)convolution_forward, _backward_data or "
                          "_backward_weights, got '" + primitive + "'");
}

} // namespace

void bind_kernel_probe(py::module_ &m) {
    m.def("primitive_impl", [](const std::string &primitive, const std::string &dtype,
                                    const dims &src, const dims &weights, const dims &dst,
                                    const dims &strides, const dims &dilates, const dims &pads_l,
                                    const dims &pads_r) {
        const size_t spatial = src.size() < 3 ? 0 : src.size() - 2;
        if (src.size() < 3 || dst.size() != src.size()
                || (weights.size() != src.size() && weights.size() != src.size() + 1)
                || strides.size() != spatial || dilates.size() != spatial
                || pads_l.size() != spatial || pads_r.size() != spatial)
            throw py::value_error("primitive_impl: src and dst are (N, C, spatial...), weights "
                                  "(O, I, spatial...) or (G, O/G, I/G, spatial...), and strides, "
                                  "dilates and pads have one value per spatial axis");
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
}

} // namespace onednn_graph
