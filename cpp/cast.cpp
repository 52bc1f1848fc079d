// The conversion of whole arrays (cast.hpp): the strided walk, the split over
// threads, and the binding (_core.cast, _core.Cast, the paths).
#include "cast.hpp"
#include "buffers.hpp"
#include "onednn_thread.hpp"
#include "threads.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace onednn_graph {

namespace {

struct PairInfo {
    const char *from, *to;
    size_t from_size, to_size;
    PyObject *from_dtype, *to_dtype; // the package's dtype objects (table_dtype)
};

const PairInfo &info(CastPair pair) {
    // Made on first use, after the module has loaded the dtype table.
    static const PairInfo pairs[5] = {
            {"bf16", "f32", 2, 4, table_dtype("bf16"), table_dtype("f32")},
            {"f16", "f32", 2, 4, table_dtype("f16"), table_dtype("f32")},
            {"f32", "bf16", 4, 2, table_dtype("f32"), table_dtype("bf16")},
            {"f32", "f16", 4, 2, table_dtype("f32"), table_dtype("f16")},
            {"f32", "f32", 4, 4, table_dtype("f32"), table_dtype("f32")},
    };
    return pairs[static_cast<int>(pair)];
}

CastPair pair_of(const std::string &from, const std::string &to) {
    if (from == "bf16" && to == "f32") return CastPair::bf16_to_f32;
    if (from == "f16" && to == "f32") return CastPair::f16_to_f32;
    if (from == "f32" && to == "bf16") return CastPair::f32_to_bf16;
    if (from == "f32" && to == "f16") return CastPair::f32_to_f16;
    if (from == "f32" && to == "f32") return CastPair::f32_to_f32; // a rearranging copy
    throw py::value_error("the package converts bf16 or f16 to f32, f32 to bf16 or f16, and copies f32, not "
            + from + " to " + to);
}

const char *path_name(CastPath path) {
    switch (path) {
    case CastPath::portable: return "portable";
    case CastPath::avx2: return "avx2";
    case CastPath::avx512: return "avx512";
    }
    return "?";
}

CastPath path_of(const std::string &name) {
    for (auto path : {CastPath::portable, CastPath::avx2, CastPath::avx512}) {
        if (name != path_name(path)) continue;
        if (!cast_path_available(path))
            throw py::value_error("path '" + name + "' needs instructions this CPU lacks ("
                    + (path == CastPath::avx2 ? "AVX2 and F16C" : "AVX-512 F, BW and VL") + ")");
        return path;
    }
    throw py::value_error("path must be 'portable', 'avx2' or 'avx512', got '" + name + "'");
}

// Below this many elements a conversion runs on the calling thread: waking the
// other threads costs more than they save (AVX2 EPYC and Sapphire Rapids, 2 cores).
constexpr int64_t parallel_from = 1 << 16;
// A thread converts rows in blocks of at most this many elements, so that one
// long row (a contiguous array is one row) splits between threads too.
constexpr int64_t block_elements = 1 << 14;
// Strided rows go through buffers of this many elements on the stack.
constexpr int64_t gather_elements = 512;
// Rows shorter than this cost more in their call than in their elements: where the
// destination is dense over two axes, they go as tiles (CastJob::tile).
constexpr int64_t short_row = 16;

// Fills `job`'s walk from the arrays' axes (extent, src stride, dst stride): axes of
// extent 1 dropped, the smallest |dst stride| innermost (so that writes run along
// rows), then merged from the inside out where the outer axis steps exactly over
// the inner one's extent in both arrays.
void plan_walk(CastJob &job, const py::array &s, const py::array &d, const std::string &who) {
    job.tile = job.transpose = false;
    const auto c_order = py::array::c_style;
    if ((s.flags() & c_order) && (d.flags() & c_order)) { // the usual case: one row
        job.axes = 1;
        job.axis[0] = {job.total, static_cast<int64_t>(s.itemsize()), static_cast<int64_t>(d.itemsize())};
        return;
    }
    CastAxis axes[64]; // NumPy's most
    int n = 0;
    for (py::ssize_t i = 0; i < s.ndim(); ++i) {
        if (s.shape(i) <= 1) continue;
        // Insertion by |dst stride|, largest first, stable: a handful of axes.
        const CastAxis a {s.shape(i), s.strides(i), d.strides(i)};
        int at = n++;
        for (; at > 0 && std::llabs(axes[at - 1].dst_stride) < std::llabs(a.dst_stride); --at) axes[at] = axes[at - 1];
        axes[at] = a;
    }
    CastAxis merged[64];
    int m = 0;
    for (int i = n - 1; i >= 0; --i) { // innermost first
        if (m > 0) {
            CastAxis &inner = merged[m - 1];
            if (axes[i].src_stride == inner.extent * inner.src_stride
                    && axes[i].dst_stride == inner.extent * inner.dst_stride) {
                inner.extent *= axes[i].extent;
                continue;
            }
        }
        merged[m++] = axes[i];
    }
    if (m == 0) merged[m++] = {1, static_cast<int64_t>(s.itemsize()), static_cast<int64_t>(d.itemsize())};
    if (m > max_cast_axes)
        throw py::value_error(who + ": the arrays have more than " + std::to_string(max_cast_axes)
                + " axes that do not lie in memory together");
    job.axes = m;
    for (int i = 0; i < m; ++i) job.axis[i] = merged[m - 1 - i]; // outermost first
    if (m >= 2) {
        const CastAxis &outer = job.axis[m - 2], &inner = job.axis[m - 1];
        const auto from = static_cast<int64_t>(s.itemsize()), to = static_cast<int64_t>(d.itemsize());
        // Gathered wherever the destination is dense over both axes and the rows would be
        // strided or short in the source (a depth-to-space: each row a few phases).
        job.tile = inner.dst_stride == to && outer.dst_stride == inner.extent * to
                && inner.extent <= gather_elements && (inner.src_stride != from || inner.extent < short_row);
        job.transpose = job.pair == CastPair::f32_to_f32 && outer.src_stride == 4 && inner.dst_stride == 4
                && outer.extent >= transpose_block_size && inner.extent >= transpose_block_size
                && inner.src_stride > 0 && inner.src_stride % 4 == 0 && outer.dst_stride > 0
                && outer.dst_stride % 4 == 0;
        if (job.transpose) job.tile = false;
    }
}

// One tile (CastJob::tile): the destination's dense row of outer.extent * inner.extent
// elements, gathered from the source a buffer at a time.
void convert_tile(CastRow row, const PairInfo &p, const char *src, const CastAxis &outer,
        const CastAxis &inner, char *dst) {
    alignas(64) char gathered[gather_elements * 4];
    const int64_t per = gather_elements / inner.extent; // outer positions per buffer (>= 1)
    for (int64_t w0 = 0; w0 < outer.extent; w0 += per) {
        const int64_t w1 = std::min(outer.extent, w0 + per);
        char *to = gathered;
        if (p.from_size == 4) {
            for (int64_t w = w0; w < w1; ++w)
                for (int64_t j = 0; j < inner.extent; ++j, to += 4)
                    std::memcpy(to, src + w * outer.src_stride + j * inner.src_stride, 4);
        } else {
            for (int64_t w = w0; w < w1; ++w)
                for (int64_t j = 0; j < inner.extent; ++j, to += 2)
                    std::memcpy(to, src + w * outer.src_stride + j * inner.src_stride, 2);
        }
        row(gathered, dst + w0 * inner.extent * static_cast<int64_t>(p.to_size),
                static_cast<size_t>((w1 - w0) * inner.extent));
    }
}

// n elements of one row at the given byte strides.
void convert_row(CastRow row, const PairInfo &p, const char *src, int64_t src_stride, char *dst,
        int64_t dst_stride, int64_t n) {
    const bool src_dense = src_stride == static_cast<int64_t>(p.from_size);
    const bool dst_dense = dst_stride == static_cast<int64_t>(p.to_size);
    if (src_dense && dst_dense) {
        row(src, dst, static_cast<size_t>(n));
        return;
    }
    alignas(64) char gathered[gather_elements * 4], converted[gather_elements * 4];
    for (int64_t start = 0; start < n; start += gather_elements) {
        const int64_t m = std::min(gather_elements, n - start);
        const char *from = src + start * src_stride;
        if (!src_dense) {
            for (int64_t i = 0; i < m; ++i)
                std::memcpy(gathered + i * p.from_size, from + i * src_stride, p.from_size);
            from = gathered;
        }
        char *to = dst_dense ? dst + start * dst_stride : converted;
        row(from, to, static_cast<size_t>(m));
        if (!dst_dense)
            for (int64_t i = 0; i < m; ++i)
                std::memcpy(dst + (start + i) * dst_stride, converted + i * p.to_size, p.to_size);
    }
}

} // namespace

CastPath default_cast_path() {
    static const CastPath chosen = [] { // oneDNN's ISA is fixed once it has been read
    const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
    const auto has = [isa](dnnl::cpu_isa wanted) {
        const auto bits = static_cast<unsigned>(wanted);
        return (isa & bits) == bits;
    };
    if (has(dnnl::cpu_isa::avx512_core) && cast_path_available(CastPath::avx512)) return CastPath::avx512;
    if (has(dnnl::cpu_isa::avx2) && cast_path_available(CastPath::avx2)) return CastPath::avx2;
    return CastPath::portable;
    }();
    return chosen;
}

void cast_job(CastJob &job, CastPair pair, py::handle src, py::handle dst, const char *name, bool disjoint) {
    const std::string who(name);
    const PairInfo &p = info(pair);
    if (!py::isinstance<py::array>(src)) throw py::type_error(who + ": the source must be a numpy.ndarray");
    if (!py::isinstance<py::array>(dst)) throw py::type_error(who + ": the destination must be a numpy.ndarray");
    const auto s = py::reinterpret_borrow<py::array>(src);
    auto d = py::reinterpret_borrow<py::array>(dst);
    if (!has_dtype(s, p.from_dtype))
        throw py::type_error(who + ": the source must be " + p.from + ", got " + std::string(py::str(s.dtype())));
    if (!has_dtype(d, p.to_dtype))
        throw py::type_error(who + ": the destination must be " + p.to + ", got " + std::string(py::str(d.dtype())));
    job.pair = pair;
    if (s.ndim() != d.ndim() || !std::equal(s.shape(), s.shape() + s.ndim(), d.shape()))
        throw py::value_error(who + ": the source and destination shapes differ");
    if (!d.writeable()) throw py::value_error(who + ": the destination is read-only");
    if (!disjoint && overlaps(s, d)) throw py::value_error(who + ": the source and destination share memory");
    job.total = s.size();
    plan_walk(job, s, d, who);
    job.src = static_cast<const char *>(s.data());
    job.dst = static_cast<char *>(d.mutable_data());
}

namespace {

// A transposing copy (CastJob::transpose): one task per outer row and block of the
// outer swapped axis, each copying its blocks along the whole inner axis.
void run_transpose(const CastJob &job, int threads, CastPath path) {
    const TransposeBlock block = transpose_block(path);
    const CastAxis &a = job.axis[job.axes - 2], &b = job.axis[job.axes - 1];
    const int depth = job.axes - 2;
    constexpr int64_t size = transpose_block_size;
    const int64_t a_blocks = (a.extent + size - 1) / size;
    const int64_t tasks = job.total / (a.extent * b.extent) * a_blocks;
    auto work = [&](int i, int n) {
        for (int64_t t = tasks * i / n, last = tasks * (i + 1) / n; t < last; ++t) {
            int64_t r = t / a_blocks, src_off = 0, dst_off = 0;
            for (int k = depth; k-- > 0;) {
                src_off += r % job.axis[k].extent * job.axis[k].src_stride;
                dst_off += r % job.axis[k].extent * job.axis[k].dst_stride;
                r /= job.axis[k].extent;
            }
            const int64_t i0 = t % a_blocks * size;
            const int rows = static_cast<int>(std::min(size, a.extent - i0));
            const auto *src = reinterpret_cast<const float *>(job.src + src_off) + i0;
            auto *dst = reinterpret_cast<float *>(job.dst + dst_off + i0 * a.dst_stride);
            for (int64_t j0 = 0; j0 < b.extent; j0 += size) {
                const int cols = static_cast<int>(std::min(size, b.extent - j0));
                const float *from = src + j0 * (b.src_stride / 4);
                if (rows == size && cols == size) block(from, b.src_stride / 4, dst + j0, a.dst_stride / 4);
                else transpose_edge(from, b.src_stride / 4, dst + j0, a.dst_stride / 4, rows, cols);
            }
        }
    };
    if (job.total < parallel_from) {
        work(0, 1);
        return;
    }
    parallel(threads, work);
}

} // namespace

void run_cast(const CastJob &job, int threads, CastPath path) {
    if (job.total == 0) return;
    if (job.transpose) {
        run_transpose(job, threads, path);
        return;
    }
    const PairInfo &p = info(job.pair);
    const CastRow row = cast_row(job.pair, path);
    const CastAxis &inner = job.axis[job.axes - 1];
    if (job.axes == 1 && job.total < parallel_from) { // one short row: no walk to plan
        convert_row(row, p, job.src, inner.src_stride, job.dst, inner.dst_stride, job.total);
        return;
    }
    const CastAxis *outer = job.axis;
    const int depth = job.axes - (job.tile ? 2 : 1); // axes outside a row
    const int64_t row_extent = job.tile ? inner.extent * job.axis[job.axes - 2].extent : inner.extent;
    const int64_t rows = job.total / row_extent;
    const int64_t blocks = job.tile ? 1 : (inner.extent + block_elements - 1) / block_elements;
    const int64_t tasks = rows * blocks;
    auto work = [&](int i, int n) {
        const int64_t first = tasks * i / n, last = tasks * (i + 1) / n;
        if (first >= last) return;
        // The row of `first` as an index over the outer axes, then stepped like an odometer.
        int64_t index[max_cast_axes];
        int64_t r = first / blocks, src_off = 0, dst_off = 0;
        for (int k = depth; k-- > 0;) {
            index[k] = r % outer[k].extent;
            r /= outer[k].extent;
            src_off += index[k] * outer[k].src_stride;
            dst_off += index[k] * outer[k].dst_stride;
        }
        auto next_row = [&] { // the odometer's step over the outer axes
            for (int k = depth; k-- > 0;) {
                src_off += outer[k].src_stride;
                dst_off += outer[k].dst_stride;
                if (++index[k] < outer[k].extent) break;
                src_off -= index[k] * outer[k].src_stride;
                dst_off -= index[k] * outer[k].dst_stride;
                index[k] = 0;
            }
        };
        for (int64_t t = first; t < last; ++t) {
            if (job.tile) {
                convert_tile(row, p, job.src + src_off, job.axis[job.axes - 2], inner, job.dst + dst_off);
                next_row();
                continue;
            }
            const int64_t b = t % blocks;
            const int64_t start = b * block_elements, m = std::min(block_elements, inner.extent - start);
            convert_row(row, p, job.src + src_off + start * inner.src_stride, inner.src_stride,
                    job.dst + dst_off + start * inner.dst_stride, inner.dst_stride, m);
            if (b + 1 == blocks) next_row();
        }
    };
    if (job.total < parallel_from) {
        work(0, 1);
        return;
    }
    parallel(threads, work);
}

void bind_cast(py::module_ &m) {
    py::class_<Cast>(m, "Cast",
            "The package's conversion between f32 and bf16 / f16, as a step of an f32 chain.")
            .def(py::init([](const std::string &from, const std::string &to, int threads) {
                if (threads < 0) throw py::value_error("Cast: threads must be >= 0 (0: oneDNN's default)");
                return Cast {pair_of(from, to), threads};
            }), py::arg("source"), py::arg("target"), py::arg("threads") = 0)
            .def_property_readonly("source", [](const Cast &c) { return info(c.pair).from; })
            .def_property_readonly("target", [](const Cast &c) { return info(c.pair).to; })
            .def_property_readonly("threads", [](const Cast &c) { return c.threads; })
            .def("__call__", [](const Cast &c, py::handle src, py::handle dst) {
                CastJob job;
                cast_job(job, c.pair, src, dst, "Cast");
                const CastPath path = default_cast_path();
                without_gil([&] { on_onednn_thread([&] { run_cast(job, c.threads, path); }); });
            }, py::arg("src"), py::arg("dst"), "Convert `src` into `dst` (any strides, the same shape).")
            .def("__repr__", [](const Cast &c) {
                return "Cast(" + std::string(info(c.pair).from) + " -> " + info(c.pair).to + ", threads="
                        + std::to_string(c.threads) + ")";
            });
    m.def("cast", [](py::handle src, py::handle dst, int threads, const std::string &path) {
        if (threads < 0) throw py::value_error("cast: threads must be >= 0 (0: oneDNN's default)");
        const CastPath chosen = path.empty() ? default_cast_path() : path_of(path);
        if (!py::isinstance<py::array>(src) || !py::isinstance<py::array>(dst))
            throw py::type_error("cast: src and dst must be numpy.ndarray");
        const CastPair pair = pair_of(table_dtype_name(py::reinterpret_borrow<py::array>(src)),
                table_dtype_name(py::reinterpret_borrow<py::array>(dst)));
        CastJob job;
        cast_job(job, pair, src, dst, "cast");
        without_gil([&] { on_onednn_thread([&] { run_cast(job, threads, chosen); }); });
    }, py::arg("src"), py::arg("dst"), py::arg("threads") = 0, py::arg("path") = "",
            "Convert `src` into `dst` between f32 and bf16 / f16 (one of them f32), or copy f32 to f32: "
            "upcasts exact, downcasts rounded to nearest even, bit for bit ml_dtypes' and NumPy's astype. Any "
            "strides; `threads` caps the threads (0: oneDNN's count); `path` forces 'portable', "
            "'avx2' or 'avx512' (default: cast_path()).");
    m.def("cast_path", [] { return path_name(default_cast_path()); },
            "The code conversions run on here: 'avx512', 'avx2' (with F16C) or 'portable', the "
            "widest this CPU has within oneDNN's ISA (ONEDNN_MAX_CPU_ISA caps both).");
    m.def("cast_paths", [] {
        std::vector<std::string> names;
        for (auto path : {CastPath::portable, CastPath::avx2, CastPath::avx512})
            if (cast_path_available(path)) names.push_back(path_name(path));
        return names;
    }, "Every path this CPU can run (cast(..., path=) takes them), whatever oneDNN's cap.");
}

} // namespace onednn_graph
