// ChainCall (see direct_call.hpp): a cached f32 chain (a bf16/f16 op run as
// TypeCast -> op in f32 -> TypeCast, _impl/as_f32.py) run in one native call.
//
// Each step is a compiled partition, or a TypeCast the package converts itself
// (a Cast, cast.hpp), reading and writing slots: the caller's arrays, the result,
// arrays fixed for the chain's life (a constant input's f32 copy) and f32 scratch
// arrays. The scratch arrays are made once per calling thread (by the Python
// callable `allocate`) and reused by every later call on that thread, so a
// repeated call allocates nothing but a new result; threads never share them, so
// several may run one chain at once. Every step's arrays are checked before the
// first step runs: a refusal leaves everything untouched.
//
// A chain compiled for part of a batch (`rows` samples; _impl/as_f32.py decides
// where that pays) runs its per-sample steps once per part, on views of the
// caller's arrays: the f32 copies then hold one part, small enough to stay in the
// CPU's caches between the cast that writes them and the op that reads them.
#include "cast.hpp"
#include "direct_call.hpp"
#include "execute.hpp"
#include "onednn_thread.hpp"

#include <algorithm>
#include <memory>
#include <thread>
#include <unordered_map>

namespace onednn_graph {

namespace {

struct Step {
    py::object object; // the CompiledPartition or Cast object: keeps it alive
    const CompiledPartition *compiled; // one of these two is null
    const Cast *cast;
    std::vector<size_t> inputs, outputs; // slots, in the order the partition was compiled with
    bool per_part = false; // runs once per part of the batch (ChainCall's `rows`)
};

// `n` default-initialized values, on the stack when there are at most N: the
// per-call arrays of the hot path, which would otherwise cost a malloc each.
template <typename T, size_t N>
class Local {
public:
    explicit Local(size_t n) : data_(n <= N ? inline_ : (heap_.reset(new T[n]), heap_.get())) {}
    Local(const Local &) = delete;
    Local &operator=(const Local &) = delete;
    T &operator[](size_t i) { return data_[i]; }
    T *data() { return data_; }

private:
    T inline_[N];
    std::unique_ptr<T[]> heap_;
    T *data_;
};

// One step's arrays, checked: a partition's or a conversion's.
struct CheckedStep {
    CheckedArrays arrays;
    CastJob cast;
};

class ChainCall : public NativeCall {
public:
    ChainCall(const py::list &steps, std::vector<size_t> inputs, size_t output, const py::dict &fixed,
            std::vector<size_t> scratch, py::object allocate, std::vector<py::ssize_t> shape, py::dtype dtype,
            std::vector<size_t> batched, py::ssize_t rows)
        : inputs_(std::move(inputs))
        , output_(output)
        , scratch_slots_(std::move(scratch))
        , allocate_(std::move(allocate))
        , shape_(std::move(shape))
        , dtype_(std::move(dtype))
        , batched_(std::move(batched))
        , rows_(rows) {
        size_t top = output_;
        for (size_t s : inputs_) top = std::max(top, s);
        for (size_t s : scratch_slots_) top = std::max(top, s);
        for (const auto &item : fixed) {
            const size_t slot = item.first.cast<size_t>();
            fixed_.emplace_back(slot, py::reinterpret_borrow<py::array>(item.second));
            top = std::max(top, slot);
        }
        for (const auto &item : steps) {
            const auto step = item.cast<py::tuple>();
            if (step.size() != 3)
                throw py::value_error("ChainCall: a step is (partition or Cast, input slots, output slots)");
            const bool is_cast = py::isinstance<Cast>(step[0]);
            Step s {step[0], is_cast ? nullptr : &step[0].cast<const CompiledPartition &>(),
                    is_cast ? &step[0].cast<const Cast &>() : nullptr, step[1].cast<std::vector<size_t>>(),
                    step[2].cast<std::vector<size_t>>()};
            const size_t ins = is_cast ? 1 : s.compiled->inputs.size(), outs = is_cast ? 1 : s.compiled->outputs.size();
            if (s.inputs.size() != ins || s.outputs.size() != outs)
                throw py::value_error("ChainCall: a step names another number of slots than its partition has");
            for (size_t slot : s.inputs) top = std::max(top, slot);
            for (size_t slot : s.outputs) top = std::max(top, slot);
            steps_.push_back(std::move(s));
        }
        if (steps_.empty()) throw py::value_error("ChainCall: no steps");
        slots_ = top + 1;
        if (rows_ < 0) throw py::value_error("ChainCall: rows must be >= 0");
        // A step runs once per part of the batch where it reads a batched array or a
        // result of such a step; the others (the weights' cast) run once.
        std::vector<bool> per_part(slots_, false);
        for (size_t b : batched_) {
            if (b >= inputs_.size()) throw py::value_error("ChainCall: batched names an input it does not have");
            per_part[inputs_[b]] = rows_ > 0;
        }
        for (Step &s : steps_) {
            for (size_t i : s.inputs) s.per_part = s.per_part || per_part[i];
            for (size_t o : s.outputs) {
                per_part[o] = s.per_part;
                if (o == output_ && rows_ > 0 && !s.per_part)
                    throw py::value_error("ChainCall: the result's step reads no batched array");
            }
        }
    }

    py::object run(dnnl::stream &stream, py::handle arrays, py::handle out) const override {
        if (!out.is_none() && !exact_array(out)) return py::none();
        const auto given = py::reinterpret_steal<py::object>(PySequence_Fast(arrays.ptr(), "arrays"));
        if (!given) throw py::error_already_set();
        const ArrayList caller = array_list(given);
        if (caller.size != inputs_.size()) return py::none();
        for (size_t i = 0; i < caller.size; ++i)
            if (!py::isinstance<py::array>(caller.items[i])) return py::none();
        // The result is written last, from the chain's own f32 copy: an `out`
        // sharing memory with an input is refused as the direct call refuses it.
        if (!out.is_none())
            for (size_t i = 0; i < caller.size; ++i)
                if (overlaps(py::reinterpret_borrow<py::array>(out),
                            py::reinterpret_borrow<py::array>(caller.items[i])))
                    return py::none();
        py::object target = result_or_out(out, dtype_, shape_);
        Local<PyObject *, 32> slot(slots_);
        std::fill(slot.data(), slot.data() + slots_, nullptr);
        for (size_t i = 0; i < caller.size; ++i) slot[inputs_[i]] = caller.items[i];
        for (const auto &f : fixed_) slot[f.first] = f.second.ptr(); // a constant's copy, not the caller's
        const std::vector<py::object> &mine = scratch();
        for (size_t j = 0; j < scratch_slots_.size(); ++j) slot[scratch_slots_[j]] = mine[j].ptr();
        slot[output_] = target.ptr();
        // The batch in parts of rows_ samples: per part, views of the batched arrays
        // and of the result (all of one batch size, a multiple of rows_).
        size_t parts = 1;
        if (rows_ > 0) {
            const py::ssize_t batch = parted_batch(target.ptr(), caller, batched_, rows_);
            if (batch < 0) return py::none();
            parts = static_cast<size_t>(batch / rows_);
        }
        std::vector<py::object> views; // held while the steps run
        // Every step's arrays in every part, checked before anything runs; a step that
        // reads no batched array runs with the first part only.
        Local<CheckedStep, 8> checked(parts * steps_.size());
        const auto at = [&](size_t p, size_t k) -> CheckedStep & { return checked[p * steps_.size() + k]; };
        try {
            for (size_t p = 0; p < parts; ++p) {
                if (rows_ > 0) {
                    const py::ssize_t start = static_cast<py::ssize_t>(p) * rows_;
                    for (size_t b : batched_) {
                        views.push_back(first_rows(caller.items[b], start, rows_));
                        slot[inputs_[b]] = views.back().ptr();
                    }
                    views.push_back(first_rows(target.ptr(), start, rows_));
                    slot[output_] = views.back().ptr();
                }
                for (size_t k = 0; k < steps_.size(); ++k)
                    if (p == 0 || steps_[k].per_part) check_step(at(p, k), steps_[k], slot.data(), stream);
            }
        } catch (const py::type_error &) {
            return py::none();
        } catch (const py::value_error &) {
            return py::none();
        }
        const CastPath path = default_cast_path();
        without_gil([&] {
            on_onednn_thread([&] {
                for (size_t p = 0; p < parts; ++p)
                    for (size_t k = 0; k < steps_.size(); ++k) {
                        if (p > 0 && !steps_[k].per_part) continue; // ran with the first part
                        if (steps_[k].cast) run_cast(at(p, k).cast, steps_[k].cast->threads, path);
                        else execute_checked(*steps_[k].compiled, stream, at(p, k).arrays);
                    }
            });
        });
        return target;
    }

    size_t threads_with_buffers() const { return scratch_.size(); }

private:
    // One step's arrays in `slot`, checked into `checked` (TypeError / ValueError otherwise).
    static void check_step(CheckedStep &checked, const Step &s, PyObject *const *slot, const dnnl::stream &stream) {
        if (s.cast) {
            // One side of a chain's cast is the chain's own array (a scratch or a
            // constant's copy): it shares no memory with the other.
            cast_job(checked.cast, s.cast->pair, slot[s.inputs[0]], slot[s.outputs[0]], "execute", true);
            return;
        }
        Local<PyObject *, 8> ins(s.inputs.size()), outs(s.outputs.size());
        for (size_t j = 0; j < s.inputs.size(); ++j) ins[j] = slot[s.inputs[j]];
        for (size_t j = 0; j < s.outputs.size(); ++j) outs[j] = slot[s.outputs[j]];
        check_stream(*s.compiled, stream, "execute");
        checked.arrays = check_arrays(*s.compiled, "execute", ArrayList {ins.data(), s.inputs.size()},
                ArrayList {outs.data(), s.outputs.size()});
    }

    // The calling thread's scratch arrays, made on its first call. Runs with the
    // GIL held, as every access to scratch_ does; references into an
    // unordered_map stay valid when other threads add theirs.
    const std::vector<py::object> &scratch() const {
        const auto id = std::this_thread::get_id();
        auto found = scratch_.find(id);
        if (found != scratch_.end()) return found->second;
        const auto made = allocate_().cast<py::list>();
        if (made.size() != scratch_slots_.size())
            throw py::value_error("ChainCall: allocate() returned " + std::to_string(made.size())
                    + " arrays, the chain has " + std::to_string(scratch_slots_.size()) + " scratch slots");
        std::vector<py::object> arrays;
        for (const auto &a : made) arrays.push_back(py::reinterpret_borrow<py::object>(a));
        return scratch_.emplace(id, std::move(arrays)).first->second;
    }

    std::vector<Step> steps_;
    std::vector<size_t> inputs_; // slot of each caller array
    size_t output_;
    std::vector<std::pair<size_t, py::array>> fixed_;
    std::vector<size_t> scratch_slots_;
    py::object allocate_;
    std::vector<py::ssize_t> shape_;
    py::dtype dtype_;
    std::vector<size_t> batched_; // caller arrays whose first axis is the batch
    py::ssize_t rows_ = 0;        // samples per part of the batch (0: the batch at once)
    size_t slots_ = 0;
    mutable std::unordered_map<std::thread::id, std::vector<py::object>> scratch_;
};

} // namespace

void bind_chain_call(py::module_ &m) {
    py::class_<ChainCall, NativeCall>(m, "ChainCall",
            "The compiled partitions of an f32 chain run on the caller's arrays in one native call.")
            .def(py::init<const py::list &, std::vector<size_t>, size_t, const py::dict &, std::vector<size_t>,
                         py::object, std::vector<py::ssize_t>, py::dtype, std::vector<size_t>, py::ssize_t>(),
                    py::arg("steps"), py::arg("inputs"), py::arg("output"), py::arg("fixed"), py::arg("scratch"),
                    py::arg("allocate"), py::arg("shape"), py::arg("dtype"), py::arg("batched") = std::vector<size_t>(),
                    py::arg("rows") = 0,
                    "`steps`: (CompiledPartition or Cast, input slots, output slots) in execution order;\n"
                    "`inputs`: the slot of each caller array; `output`: the result's slot; `fixed`:\n"
                    "slot -> array for the chain's life; `scratch`: slots whose arrays `allocate()`\n"
                    "returns (a list, in that order) once per calling thread; `shape` and `dtype`:\n"
                    "those of a new result. With `rows` > 0 the steps were compiled for `rows` samples\n"
                    "and run on the batch in parts: the caller arrays at positions `batched` and the\n"
                    "result are split along their first axis; steps that read none of them run once.")
            .def_property_readonly("threads_with_buffers", &ChainCall::threads_with_buffers,
                    "How many threads have scratch arrays (made on a thread's first call).");
}

} // namespace onednn_graph
