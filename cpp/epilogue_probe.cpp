// How many times oneDNN's strided deconvolution kernel applies a ConvTranspose's
// epilogue (its bias, post-ops) to each output: once where the kernel is right.
//
// oneDNN 3.2 (fixed in 3.3: e127e9b8c8, "cpu: x64: fix kd/kh blocking for brg
// deconv") runs ConvTranspose with a stride on brgconv_strided, which walks the
// kernel's rows in groups. Where its blocking heuristic makes the groups one row
// long (jcp.kh_block or kd_block 1 with a stride of 2 or more), a group whose row
// has the other stride phase holds no tap, and the kernel still runs its brgemm
// call with the post-ops (jit_brgemm_conv_bwd_strided.cpp, call_brgemm_kernel:
// do_skip_accm): the bias is added to the output once more per such group, a ReLU
// applied to a partial sum. The heuristic weighs the channels, the kernel, the batch,
// the spatial sizes, the thread count and this CPU's cache sizes, so the package
// does not predict it: it runs the kernel once on data whose right answer is known
// (zeros, a bias of ones: every output is 1) and counts. The primitive is the one the
// Graph API's backend builds for a ConvTranspose partition (every format "any",
// forward_inference, compiled on the calling thread's OpenMP thread count); a "sum"
// post-op (a fused Add of a full-size tensor, which reads the destination) changes
// its blocking, so it is one of the questions.
#include "onednn_thread.hpp"
#include "primitive_problem.hpp"
#include "threads.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace onednn_graph {

namespace {

using tag = dnnl::memory::format_tag;

// `n` copies of 1 in `dtype` (f32, bf16 or f16), written to `to`.
void fill_ones(void *to, size_t n, dnnl::memory::data_type dtype) {
    using dt = dnnl::memory::data_type;
    if (dtype == dt::f32) {
        std::fill_n(static_cast<float *>(to), n, 1.f);
    } else if (dtype == dt::bf16 || dtype == dt::f16) {
        const uint16_t one = dtype == dt::bf16 ? 0x3F80 : 0x3C00; // 1.0 in each format
        std::fill_n(static_cast<uint16_t *>(to), n, one);
    } else {
        throw py::value_error("epilogue_repeats: the bias is f32, bf16 or f16, got another dtype");
    }
}

// Dense strides of `shape` (row-major): the plain layout the result is read in.
dims dense_strides(const dims &shape) {
    dims strides(shape.size(), 1);
    for (size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i];
    return strides;
}

int64_t repeats(const std::string &src_dt, const std::string &weights_dt, const std::string &bias_dt,
        const std::string &dst_dt, const dims &src, const dims &weights, const dims &dst,
        const dims &strides, const dims &dilates, const dims &pads_l, const dims &pads_r, int threads,
        bool with_sum) {
    // The limit holds while the primitive is created (its blocking reads the count)
    // and runs, as a compiled partition's does.
    ThreadLimit limit(threads);
    const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    const dnnl::memory::desc s(src, memory_type(src_dt), tag::any),
            w(weights, memory_type(weights_dt), tag::any), d(dst, memory_type(dst_dt), tag::any),
            b({dst[1]}, memory_type(bias_dt), tag::a);
    dnnl::primitive_attr attr;
    if (with_sum) {
        dnnl::post_ops post;
        post.append_sum(1.f);
        attr.set_post_ops(post);
    }
    const dnnl::deconvolution_forward::primitive_desc pd(engine, dnnl::prop_kind::forward_inference,
            dnnl::algorithm::deconvolution_direct, s, w, b, d, strides, dilates, pads_l, pads_r, attr);
    // Only this implementation walks the kernel in row groups that can be empty.
    if (std::string(pd.impl_info_str()).find("brgconv_strided") == std::string::npos) return 1;
    dnnl::memory src_m(pd.src_desc(), engine), weights_m(pd.weights_desc(), engine),
            bias_m(pd.bias_desc(), engine), dst_m(pd.dst_desc(), engine);
    // Zero is all-zero bytes in every dtype and layout; the sum reads a zero destination.
    for (auto *m : {&src_m, &weights_m, &dst_m})
        std::memset(m->get_data_handle(), 0, m->get_desc().get_size());
    fill_ones(bias_m.get_data_handle(), static_cast<size_t>(dst[1]), memory_type(bias_dt));
    dnnl::stream stream(engine);
    dnnl::deconvolution_forward(pd).execute(stream, {{DNNL_ARG_SRC, src_m}, {DNNL_ARG_WEIGHTS, weights_m},
            {DNNL_ARG_BIAS, bias_m}, {DNNL_ARG_DST, dst_m}});
    // The result in f32, plain: the kernel's layout may pad the channels.
    dnnl::memory plain(dnnl::memory::desc(dst, dnnl::memory::data_type::f32, dense_strides(dst)), engine);
    dnnl::reorder(dst_m, plain).execute(stream, dst_m, plain);
    stream.wait();
    const auto *values = static_cast<const float *>(plain.get_data_handle());
    size_t n = 1;
    for (auto v : dst) n *= static_cast<size_t>(v);
    float most = 1.f;
    bool all_one = true;
    for (size_t i = 0; i < n; ++i) {
        all_one = all_one && values[i] == 1.f;
        most = std::max(most, values[i]);
    }
    if (all_one) return 1;
    return std::max<int64_t>(2, static_cast<int64_t>(std::lround(most)));
}

} // namespace

void bind_epilogue_probe(py::module_ &m) {
    m.def("epilogue_repeats", [](const std::string &src_dt, const std::string &weights_dt,
                                      const std::string &bias_dt, const std::string &dst_dt,
                                      const dims &src, const dims &weights, const dims &dst,
                                      const dims &strides, const dims &dilates, const dims &pads_l,
                                      const dims &pads_r, int threads, bool with_sum) {
        check_problem("epilogue_repeats", src, weights, dst, strides, dilates, pads_l, pads_r);
        for (auto v : dst)
            if (v <= 0) throw py::value_error("epilogue_repeats: the destination is empty");
        return without_gil([&] {
            int64_t count = 0;
            on_onednn_thread([&] {
                count = repeats(src_dt, weights_dt, bias_dt, dst_dt, src, weights, dst, strides, dilates,
                        pads_l, pads_r, threads, with_sum);
            });
            return count;
        });
    }, py::arg("src_dtype"), py::arg("weights_dtype"), py::arg("bias_dtype"), py::arg("dst_dtype"),
            py::arg("src"), py::arg("weights"), py::arg("dst"), py::arg("strides"), py::arg("dilates"),
            py::arg("pads_l"), py::arg("pads_r"), py::arg("threads") = 0, py::arg("with_sum") = false,
            "How many times oneDNN's deconvolution for this problem adds its bias to an output "
            "(the most of any output): 1 where it is right, and for every implementation but "
            "brgconv_strided, which is not run. The problem is given as primitive_impl takes it; "
            "`threads` caps the OpenMP threads it is created and run on (0: no cap), and "
            "`with_sum` adds a sum post-op. It runs the kernel once on zeros with a bias of ones.");
}

} // namespace onednn_graph
