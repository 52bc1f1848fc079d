"""
Native binding of the oneDNN Graph API (CPU engine).
"""
from __future__ import annotations
import builtins
import numpy as _np
import collections.abc
import numpy
import typing
__all__: list[str] = ['CallCache', 'Cast', 'ChainCall', 'CompiledPartition', 'DirectCall', 'Engine', 'Graph', 'LogicalTensor', 'NativeCall', 'Op', 'Partition', 'Stream', 'Tensor', 'attr_types', 'call_signature', 'can_limit_threads', 'cast', 'cast_path', 'cast_paths', 'clear_onednn_caches', 'cpu_isa', 'epilogue_repeats', 'get_constant_tensor_cache', 'in_forked_child', 'max_threads', 'onednn_allocations', 'op_kinds', 'primitive_impl', 'ran_before_fork', 'reorder_impl', 'reset_onednn_peak', 'set_constant_tensor_cache', 'status_name', 'version']
class Engine:
    """
    A oneDNN engine (the CPU).
    """
    def __init__(self, kind: str = 'cpu', index: typing.SupportsInt | typing.SupportsIndex = 0) -> None:
        ...
    def __repr__(self) -> str:
        ...
    @builtins.property
    def kind(self) -> str:
        ...
class Stream:
    """
    An execution stream on an Engine.
    """
    def __init__(self, engine: Engine) -> None:
        ...
    def wait(self) -> None:
        """
        Block until everything submitted to the stream has finished.
        """
class LogicalTensor:
    """
    Metadata of a tensor: id, dtype, shape, strides, layout, property.
    """
    __hash__: typing.ClassVar[None] = None
    def __eq__(self, arg0: LogicalTensor) -> bool:
        ...
    def __init__(self, id: typing.SupportsInt | typing.SupportsIndex, dtype: typing.Any, shape: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] | None, strides: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] | None = None, layout: str = 'strided', property: str = 'variable') -> None:
        ...
    def __repr__(self) -> str:
        ...
    def is_equal(self, other: LogicalTensor) -> bool:
        """
        True when both describe the same tensor (id, dtype, shape, layout).
        """
    @builtins.property
    def dtype(self) -> str:
        ...
    @builtins.property
    def id(self) -> int:
        ...
    @builtins.property
    def itemsize(self) -> int:
        ...
    @builtins.property
    def layout(self) -> str:
        ...
    @builtins.property
    def layout_id(self) -> typing.Any:
        """
        oneDNN's id of an opaque layout, else None.
        """
    @builtins.property
    def nbytes(self) -> int:
        """
        Bytes of memory the tensor needs in its layout.
        """
    @builtins.property
    def ndim(self) -> int:
        """
        Number of dimensions, -1 when unknown.
        """
    @builtins.property
    def property(self) -> str:
        ...
    @builtins.property
    def shape(self) -> typing.Any:
        ...
    @builtins.property
    def strides(self) -> typing.Any:
        """
        Strides in elements, or None when the layout is not strided.
        """
class Op:
    """
    One oneDNN Graph operation with typed attributes.
    """
    def __init__(self, id: typing.SupportsInt | typing.SupportsIndex, kind: str, inputs: collections.abc.Sequence[LogicalTensor], outputs: collections.abc.Sequence[LogicalTensor], attrs: dict | None = None, name: str = '') -> None:
        ...
    def __repr__(self) -> str:
        ...
    @builtins.property
    def attrs(self) -> dict:
        """
        A copy of the attributes as set.
        """
    @builtins.property
    def id(self) -> int:
        ...
    @builtins.property
    def inputs(self) -> list[LogicalTensor]:
        ...
    @builtins.property
    def kind(self) -> str:
        ...
    @builtins.property
    def name(self) -> str:
        ...
    @builtins.property
    def outputs(self) -> list[LogicalTensor]:
        ...
class Tensor:
    """
    A logical tensor bound to an array's memory, without a copy.
    """
    def __init__(self, logical_tensor: LogicalTensor, engine: Engine, array: _np.ndarray) -> None:
        ...
    def numpy(self) -> _np.ndarray:
        """
        A NumPy view of the tensor's memory (no copy).
        """
    @builtins.property
    def array(self) -> _np.ndarray:
        """
        The array whose memory the tensor uses.
        """
    @builtins.property
    def logical_tensor(self) -> LogicalTensor:
        ...
class CompiledPartition:
    """
    A partition compiled for an engine.
    """
    def execute(self, stream: Stream, inputs: collections.abc.Sequence[Tensor], outputs: collections.abc.Sequence[Tensor]) -> None:
        ...
    def execute_arrays(self, stream: Stream, inputs: collections.abc.Sequence, outputs: collections.abc.Sequence) -> None:
        """
        Execute on NumPy arrays given in the compiled order (no Tensor objects).
        """
    def query_logical_tensor(self, id: typing.SupportsInt | typing.SupportsIndex) -> LogicalTensor:
        ...
    @builtins.property
    def compiled_threads(self) -> int:
        """
        The threads oneDNN sized its kernels for: the OpenMP thread count when it compiled (under `threads`), which its kernels run whatever the count later.
        """
    @builtins.property
    def inplace_ports(self) -> list[tuple[int, int]]:
        """
        Pairs (input id, output id) that may share memory.
        """
    @builtins.property
    def inputs(self) -> list[LogicalTensor]:
        ...
    @builtins.property
    def outputs(self) -> list[LogicalTensor]:
        ...
    @builtins.property
    def threads(self) -> int:
        """
        OpenMP threads it was compiled for and runs on; 0: oneDNN's default.
        """
class Partition:
    """
    A set of ops oneDNN compiles as one kernel.
    """
    def __repr__(self) -> str:
        ...
    def compile(self, inputs: collections.abc.Sequence[LogicalTensor], outputs: collections.abc.Sequence[LogicalTensor], engine: Engine, threads: typing.SupportsInt | typing.SupportsIndex = 0) -> CompiledPartition:
        """
        Compile for `engine`. `threads` > 0 caps the OpenMP threads the partition is
        compiled for and runs on (where oneDNN uses OpenMP; else ignored, see
        CompiledPartition.threads); 0 leaves oneDNN's default.
        """
    @builtins.property
    def engine_kind(self) -> str:
        ...
    @builtins.property
    def id(self) -> int:
        ...
    @builtins.property
    def input_ports(self) -> list[LogicalTensor]:
        ...
    @builtins.property
    def is_supported(self) -> bool:
        ...
    @builtins.property
    def op_ids(self) -> list[int]:
        ...
    @builtins.property
    def output_ports(self) -> list[LogicalTensor]:
        ...
class Graph:
    """
    A graph of ops to be partitioned and compiled.
    """
    def __init__(self, engine_kind: str = 'cpu', fpmath_mode: str = 'strict') -> None:
        ...
    def add_op(self, op: Op) -> None:
        ...
    def finalize(self) -> None:
        ...
    def get_partitions(self, policy: str = 'fusion') -> list[Partition]:
        ...
    @builtins.property
    def engine_kind(self) -> str:
        ...
    @builtins.property
    def fpmath_mode(self) -> str:
        ...
    @builtins.property
    def is_finalized(self) -> bool:
        ...
    @builtins.property
    def op_ids(self) -> list[int]:
        ...
class NativeCall:
    """
    A cached call run in one native call (DirectCall, ChainCall).
    """
    def run(self, stream: Stream, arrays: typing.Any, out: typing.Any) -> typing.Any:
        """
        Run on `arrays` (in the caller's order), writing `out` or a new result, and
        return it; None when anything is refused (nothing ran).
        """
class DirectCall(NativeCall):
    """
    A compiled op's call on the caller's arrays, checked and run in one native call.
    """
    def __init__(self, partition: typing.Any, order: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], shape: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], dtype: numpy.dtype[typing.Any], batched: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = [], rows: typing.SupportsInt | typing.SupportsIndex = 0) -> None:
        """
        `order[j]` is the caller's position of the partition's input j (empty: as
        given); `shape` and `dtype` are those of a new result. With `rows` > 0 the
        partition was compiled for `rows` samples and runs once per part of the batch:
        its inputs at positions `batched` and the result are split along their first axis.
        """
class Cast:
    """
    The package's conversion between f32 and bf16 / f16, as a step of an f32 chain.
    """
    def __call__(self, src: typing.Any, dst: typing.Any) -> None:
        """
        Convert `src` into `dst` (any strides, the same shape).
        """
    def __init__(self, source: str, target: str, threads: typing.SupportsInt | typing.SupportsIndex = 0) -> None:
        ...
    def __repr__(self) -> str:
        ...
    @builtins.property
    def source(self) -> str:
        ...
    @builtins.property
    def target(self) -> str:
        ...
    @builtins.property
    def threads(self) -> int:
        ...
class ChainCall(NativeCall):
    """
    The compiled partitions of an f32 chain run on the caller's arrays in one native call.
    """
    def __init__(self, steps: list, inputs: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], output: typing.SupportsInt | typing.SupportsIndex, fixed: dict, scratch: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], allocate: typing.Any, shape: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], dtype: numpy.dtype[typing.Any], batched: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = [], rows: typing.SupportsInt | typing.SupportsIndex = 0) -> None:
        """
        `steps`: (CompiledPartition or Cast, input slots, output slots) in execution order;
        `inputs`: the slot of each caller array; `output`: the result's slot; `fixed`:
        slot -> array for the chain's life; `scratch`: slots whose arrays `allocate()`
        returns (a list, in that order) once per calling thread; `shape` and `dtype`:
        those of a new result. With `rows` > 0 the steps were compiled for `rows` samples
        and run on the batch in parts: the caller arrays at positions `batched` and the
        result are split along their first axis; steps that read none of them run once.
        """
    @builtins.property
    def threads_with_buffers(self) -> int:
        """
        How many threads have scratch arrays (made on a thread's first call).
        """
class CallCache:
    """
    A bounded LRU of prepared calls with statistics, and their hot path.
    """
    def __init__(self, capacity: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def __len__(self) -> int:
        ...
    def call(self, stream: Stream, kind: typing.Any, arrays: typing.Any, out: typing.Any, values: typing.Any) -> typing.Any:
        """
        Run a cached call through its NativeCall and return the result; None when it
        is not cached, has no NativeCall, or was refused (nothing ran).
        """
    def clear(self) -> None:
        """
        Drop every entry and zero the statistics.
        """
    def lookup(self, key: typing.Any) -> typing.Any:
        """
        The value stored under `key`, or None; counts a hit or a miss.
        """
    def store(self, key: typing.Any, value: typing.Any, compile_seconds: typing.SupportsFloat | typing.SupportsIndex, direct: typing.Any) -> None:
        """
        Store `value` and its NativeCall (or None) under `key`.
        """
    def values(self) -> list:
        """
        The stored values, least recently used first.
        """
    @builtins.property
    def capacity(self) -> int:
        """
        Most calls kept (least recently used go first; 0 keeps none).
        """
    @capacity.setter
    def capacity(self, arg1: typing.Any) -> None:
        ...
    @builtins.property
    def compile_seconds(self) -> float:
        """
        Seconds spent compiling the calls stored (their sum).
        """
    @builtins.property
    def hits(self) -> int:
        ...
    @builtins.property
    def misses(self) -> int:
        ...
def attr_types() -> dict:
    """
    Every attribute name oneDNN knows and the type it stores.
    """
def call_signature(kind: str, arrays: tuple, out: typing.Any, values: tuple) -> typing.Any:
    """
    The cache key of a functional-API call as bytes, or None when an array is not
    exactly a _np.ndarray or a keyword value is not None, an int, a str or a
    sequence of ints (the Python signature handles those).
    """
def can_limit_threads() -> bool:
    """
    Whether a compiled partition can run on fewer threads than oneDNN's default (oneDNN uses OpenMP and its runtime is loaded).
    """
def cast(src: typing.Any, dst: typing.Any, threads: typing.SupportsInt | typing.SupportsIndex = 0, path: str = '') -> None:
    """
    Convert `src` into `dst` between f32 and bf16 / f16 (one of them f32), or copy f32 to f32: upcasts exact, downcasts rounded to nearest even, bit for bit ml_dtypes' and NumPy's astype. Any strides; `threads` caps the threads (0: oneDNN's count); `path` forces 'portable', 'avx2' or 'avx512' (default: cast_path()).
    """
def cast_path() -> str:
    """
    The code conversions run on here: 'avx512', 'avx2' (with F16C) or 'portable', the widest this CPU has within oneDNN's ISA (ONEDNN_MAX_CPU_ISA caps both).
    """
def cast_paths() -> list[str]:
    """
    Every path this CPU can run (cast(..., path=) takes them), whatever oneDNN's cap.
    """
def clear_onednn_caches() -> None:
    """
    Empty oneDNN's process-wide primitive and compiled-partition caches (compiled ops already held keep their kernels).
    """
def cpu_isa() -> str:
    """
    The CPU ISA oneDNN dispatches to on this machine.
    """
def epilogue_repeats(src_dtype: str, weights_dtype: str, bias_dtype: str, dst_dtype: str, src: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], weights: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], dst: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], strides: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], dilates: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], pads_l: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], pads_r: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], threads: typing.SupportsInt | typing.SupportsIndex = 0, with_sum: bool = False) -> int:
    """
    How many times oneDNN's deconvolution for this problem adds its bias to an output (the most of any output): 1 where it is right, and for every implementation but brgconv_strided, which is not run. The problem is given as primitive_impl takes it; `threads` caps the OpenMP threads it is created and run on (0: no cap), and `with_sum` adds a sum post-op. It runs the kernel once on zeros with a bias of ones.
    """
def get_constant_tensor_cache() -> bool:
    """
    Whether oneDNN caches reordered constant tensors (process-wide).
    """
def in_forked_child() -> bool:
    """
    Whether this process was forked after the extension loaded (its oneDNN calls then run on a thread of the extension's own: onednn_thread.hpp).
    """
def max_threads() -> int:
    """
    The threads oneDNN would run on from the calling thread: its OpenMP thread count (omp_set_num_threads, torch.set_num_threads: one OpenMP runtime), or where oneDNN is not OpenMP, the CPUs this process may run on.
    """
def onednn_allocations() -> dict:
    """
    Bytes oneDNN holds now (`current`), the most it held at once since the last
    reset_onednn_peak() (`peak`), and its number of allocations (`allocations`),
    through the package's engines: scratchpads, internal reorders, cached constants.
    On a SYCL-runtime oneDNN, `cached` is the bytes oneDNN freed that the package keeps
    for reuse and `fresh` the allocations that took new memory (0 on other builds).
    """
def op_kinds() -> list[str]:
    """
    Op kinds the linked oneDNN knows, by name.
    """
def primitive_impl(primitive: str, dtype: str, src: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], weights: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], dst: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], strides: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], dilates: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], pads_l: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], pads_r: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex]) -> str:
    """
    The name of the implementation oneDNN's primitive API picks for a convolution-family problem on this CPU, as the Graph API's backend asks for it (formats 'any'; dilates counted from 0, as the primitive API counts them). Raises Error (status unimplemented, ...) when no implementation takes it.
    """
def ran_before_fork() -> bool:
    """
    Whether this process was forked after oneDNN ran in it (its OpenMP threads then hang the forking thread's next parallel region: onednn_thread.hpp).
    """
def reorder_impl(source: str, target: str, shape: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], source_strides: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], target_strides: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex]) -> str:
    """
    The name of the reorder oneDNN's primitive API picks on this CPU to convert a strided `source`-dtype tensor into a strided `target`-dtype one (element strides), as the Graph API's backend runs a TypeCast. Raises Error when none takes it.
    """
def reset_onednn_peak() -> None:
    """
    Start a new peak of onednn_allocations() from the bytes held now.
    """
def set_constant_tensor_cache(enabled: bool) -> None:
    """
    Turn oneDNN's process-wide constant-tensor cache on or off.
    """
def status_name(arg0: typing.SupportsInt | typing.SupportsIndex) -> str:
    """
    oneDNN's name for a numeric status.
    """
def version() -> tuple[int, int, int, str, str]:
    """
    (major, minor, patch, hash, cpu_runtime) of the linked oneDNN.
    """
