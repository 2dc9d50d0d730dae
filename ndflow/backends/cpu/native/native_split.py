"""Matrix products split over native threads (the optional C module ``ndflow.backends.cpu.native._gemm``).

:mod:`.parallel` splits products over Python threads, whose wake-up costs about 70 us here: only products
of 40 MFLOP or more gain from it, and the MobileNet-style models' 1x1 convolutions (2-20 MFLOP each) ran on
one core. The C module's workers wait spinning for a while, so a split costs a few microseconds; the rows
go in chunks that whoever is free claims, so a worker the OS does not run costs nothing (the caller does
its chunks). Each chunk is one ``cblas_sgemm`` of numpy's own OpenBLAS (found in ``numpy.libs``) followed
by the convolution epilogue (bias, residual, relu/relu6/leaky relu/PReLU): a chunk has the bits of
``np.matmul`` on its rows and of the numba epilogue, and a product's chunks depend only on its shape and the
thread count, so results are deterministic. A whole product can differ from one unsplit ``np.matmul`` by
float32 rounding (OpenBLAS picks its kernels by the number of rows), as the Python split's does.

The same workers run other kernels whose output rows are independent (:func:`run_rows`): the depthwise
convolutions, whose rows numba compiles as C callbacks (``numba/_dw_rows.py``).

Flag ``CPU_NATIVE_SPLIT`` (default on where the module was built and numpy's OpenBLAS found) turns it off.
Products under ``MIN_FLOPS`` run unsplit, as before.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

import numpy as np

from ....core.flags import env

#: Products below this many floating-point operations are not split (about 15 us of work on one core).
MIN_FLOPS = 1_500_000

#: Chunks per thread: enough that a late worker leaves little for the caller to wait for.
CHUNKS_PER_THREAD = 4

#: Rows of a product chunk, at least (or a thread's share of the rows, when that is fewer): each chunk's
#: ``cblas_sgemm`` packs the whole right-hand matrix again. On 12x12 and 15x15 layers (144-225 rows, 96-576
#: columns) chunks of 18-28 rows spent a quarter of the time packing: 1.2-1.35x slower than 2 chunks.
PRODUCT_CHUNK_ROWS = 128

#: Products of fewer rows than this split by columns instead: each thread packs only its columns of the right
#: matrix (its rows of the left one are few). 36x960 @ 960x320: 1.35x faster than by rows; 16x512 @ 512x512
#: (not split by rows, under 32 rows): 1.9x faster than one thread. From 121 rows, rows are faster again.
COLUMN_SPLIT_ROWS = 112
#: Fewer rows than this are not split by columns: the chunks' products run as slow matrix-vector products
#: (one row: 2x slower than one unsplit product).
MIN_COLUMN_SPLIT_ROWS = 8
#: Products of fewer rows than ``MIN_COLUMN_SPLIT_ROWS`` whose right matrix has at least this many values split
#: by columns all the same, on the AVX-512 kernel's unpacked form (no copy to make per thread): reading that
#: matrix is their cost. 1 x 1024 @ 1024 x 1000: 30 us on two threads against 48 us on one; 2 x 512 @ 512 x 512:
#: 18 against 20 us.
FEW_ROWS_SPLIT_VALUES = 128 * 1024
#: Columns of a column chunk, at least (a multiple of 16); chunks per thread of a column split.
MIN_CHUNK_COLUMNS = 32
COLUMN_CHUNKS_PER_THREAD = 1

#: Products whose inner dimension is at most this run the C module's own kernel (``csrc/gemm_avx512.c``, where
#: the CPU has AVX-512F) instead of OpenBLAS's sgemm, on one thread too, the epilogue in registers. numpy's
#: OpenBLAS here runs its AVX2 kernels: from 24 -> 24 channels over 16384 positions (314 -> 143 us on one
#: core) to 576 x 1024 @ 1024 x 128 (1466 -> 694 us), about 2x faster. With the weights' packed copy kept between
#: calls (``csrc/pack_cache.c``) it stays ahead past 1024 too, on one thread and two, against OpenBLAS on one thread
#: (as the cpu backend runs it): 49 x 1152 @ 1152 x 192 193 us against 241, 196 x 4096 @ 4096 x 256 3609 against
#: 4246, 1 x 4096 @ 4096 x 1000 297 against 1433 (2-core AMD EPYC, Zen 4's 1 MB L2). Larger inner dimensions were
#: not measured: OpenBLAS.
AVX512_K_MAX = 4096
#: Products of at least this many rows may run the AVX-512 kernel: all of them. Under 8 rows it reads the right
#: matrix unpacked (``AVX512_PACK_MIN_ROWS`` in gemm_avx512.h), faster than OpenBLAS on every shape measured
#: (1-7 rows, k 32-1024, n 16-1404: 1.1-4x; 4 x 128 @ 128 x 128: 2.2 us against 4.0 us), but for a product too
#: wide for the cache (1 x 288 @ 288 x 1404: 24 us against 20 us).
AVX512_MIN_ROWS = 1

#: The epilogue activations of the C module (the jit's codes): linear, relu, relu6, leaky relu, PReLU.
ACTS = (0, 1, 2, 3, 4)

#: How long an idle worker spins (yielding the core to anything else runnable) before it sleeps: a model's next
#: product, or its next run in a stream of inferences, usually comes within that. Waking a sleeping worker costs
#: 75 us to milliseconds on a VM whose idle virtual core the host has parked: with 100 us here, a model's run right
#: after another (with Python's work on the outputs and the next inputs between them) took 1.13-1.29x as long on two
#: threads as with 1 ms (movenet-lightning 6.83 -> 5.67 ms, handlandmark-full 7.18 -> 5.55 ms, interleaved; 3 ms
#: gained nothing more). OpenVINO's threads spin about as long; onnxruntime's about 40 ms.
SPIN_US = 1000

# (symbol, 64-bit integers): numpy's OpenBLAS builds name cblas_sgemm with a prefix and suffix
_SYMBOLS = (
    ("scipy_cblas_sgemm64_", True),
    ("cblas_sgemm64_", True),
    ("scipy_cblas_sgemm", False),
    ("cblas_sgemm", False),
)

_state: dict[str, Any] = {"module": None, "tried": False, "why": ""}


def _configure(module: Any, avx512: object) -> None:
    lib, ilp64 = _state["sgemm"]
    module.configure(lib, ilp64, SPIN_US, AVX512_K_MAX if avx512 else 0)


def set_avx512(value: object) -> None:
    """Set hook of the flag ``CPU_AVX512`` (registered in :mod:`..flags`): reconfigures a loaded C module."""
    if _state["module"] is not None:
        _configure(_state["module"], value)


def _load() -> Any:
    """The configured C module, or None (not built, or no OpenBLAS cblas_sgemm in numpy.libs)."""
    if _state["tried"]:
        return _state["module"]
    _state["tried"] = True
    try:
        from . import _gemm  # type: ignore[attr-defined]
    except ImportError as exc:
        _state["why"] = f"the C module is not built ({exc})"
        return None
    from ..backend import numpy_openblas_libraries

    for lib in numpy_openblas_libraries():
        for name, ilp64 in _SYMBOLS:
            fn = getattr(lib, name, None)
            if fn is not None:
                _state["sgemm"] = (ctypes.cast(fn, ctypes.c_void_p).value, ilp64)
                _configure(_gemm, env().get("CPU_AVX512"))
                _state["module"] = _gemm
                _state["lib"] = lib  # keep the library loaded
                return _gemm
    _state["why"] = "numpy's OpenBLAS (numpy.libs) was not found"
    return None


def status() -> str:
    """Whether native splits run, and why not."""
    module = _load()
    if module is None:
        return f"off: {_state['why']}"
    if not env().get("CPU_NATIVE_SPLIT"):
        return "off: flag CPU_NATIVE_SPLIT is false"
    return f"on ({module.workers()} worker threads started)"


def matmul_into(
    a: np.ndarray,
    b: np.ndarray,
    out: np.ndarray,
    threads: int,
    bias: np.ndarray | None = None,
    add: np.ndarray | None = None,
    act: int = 0,
    alpha: float = 0.0,
    slopes: np.ndarray | None = None,
) -> bool:
    """``out = act(a @ b + bias + add)`` for C-contiguous float32 2-D ``a``, ``b``, ``out`` (``add``: like
    ``out``; ``bias``, ``slopes``: one value per column), split over ``threads`` when the product is large
    enough. ``act``: the jit's activation codes 0 linear, 1 relu, 2 relu6, 3 leaky relu (``alpha``), 4 prelu
    (``slopes``). False, with nothing written, where it does not apply (the caller computes)."""
    if act not in ACTS or (act == 4 and slopes is None):
        return False
    m, k = a.shape
    split = product_split(m, k, b.shape[1], threads)
    if split is None:
        return False
    arrays = (a, b, out, *(x for x in (bias, add, slopes) if x is not None))
    if any(x.dtype != np.float32 or not x.flags.c_contiguous for x in arrays):
        return False
    threads, chunk, by_cols = split
    _load().matmul(a, b, out, bias, add, act, threads, chunk, float(alpha), slopes if act == 4 else None, by_cols)
    return True


def product_split(m: int, k: int, n: int, threads: int) -> tuple[int, int, bool] | None:
    """How a product ``(m, k) @ (k, n)`` runs on the C module with up to ``threads`` threads: ``(threads,
    chunk, by_cols)`` (chunks of ``chunk`` rows, or columns when ``by_cols``), as :func:`matmul_into` runs it;
    None where it does not run there (no module, flag off, too small for a split without the AVX-512 kernel)."""
    by_cols = MIN_COLUMN_SPLIT_ROWS <= m < COLUMN_SPLIT_ROWS and n >= threads * MIN_CHUNK_COLUMNS and threads > 1
    if m < MIN_COLUMN_SPLIT_ROWS and k * n >= FEW_ROWS_SPLIT_VALUES and threads > 1 and avx512_product(m, k):
        by_cols = n >= threads * MIN_CHUNK_COLUMNS  # the unpacked form on each thread's columns
        if by_cols:
            per = -(-n // threads)
            return threads, max(MIN_CHUNK_COLUMNS, -(-per // 16) * 16), True
    if 2 * m * k * n < MIN_FLOPS or (m < 32 and not by_cols) or threads < 2:
        if not avx512_product(m, k):
            return None
        threads = 1  # the AVX-512 kernel beats OpenBLAS on one thread too
    if _load() is None or not env().get("CPU_NATIVE_SPLIT"):
        return None
    if by_cols:
        per = -(-n // (threads * COLUMN_CHUNKS_PER_THREAD))
        return threads, max(MIN_CHUNK_COLUMNS, -(-per // 16) * 16), True
    chunk = max(16, -(-m // (threads * CHUNKS_PER_THREAD)), min(PRODUCT_CHUNK_ROWS, -(-m // threads)))
    return threads, chunk, False


def avx512_product(m: int, k: int) -> bool:
    """Whether a product of ``m`` rows and an inner dimension ``k`` (split by rows) runs the C module's own
    kernel instead of OpenBLAS's sgemm."""
    if m < AVX512_MIN_ROWS or k < 1:
        return False
    module = _load()
    return module is not None and k <= module.avx512_k_max() and bool(env().get("CPU_NATIVE_SPLIT"))


def _avx512_rows(address_of: Any, arrays: tuple, ints: tuple, reals: tuple, rows: int, threads: int) -> bool:
    """Rows of one of the C module's AVX-512 row functions (``address_of(module)``, 0 where the CPU lacks
    AVX-512F) on ``threads`` threads (one is fine); False, with nothing run, where it does not apply (no
    module, no AVX-512F, flag ``CPU_AVX512`` or ``CPU_NATIVE_SPLIT`` off)."""
    return _rows_at(_avx512_address(address_of), arrays, ints, reals, rows, threads)


def _rows_at(address: int, arrays: tuple, ints: tuple, reals: tuple, rows: int, threads: int) -> bool:
    """Rows of the row function at ``address`` (0: none, False) on ``threads`` threads (one is fine)."""
    if not address:
        return False
    threads = max(1, threads)
    _state["module"].run_rows(address, arrays, ints, reals, rows, rows_chunk(rows, threads), threads)
    return True


def _avx512_address(address_of: Any) -> int:
    """``address_of(module)`` where the AVX-512 row functions may run now, else 0."""
    module = _load()
    if module is None or not env().get("CPU_NATIVE_SPLIT") or not env().get("CPU_AVX512"):
        return 0
    return address_of(module)


def rows_chunk(rows: int, threads: int) -> int:
    """The chunk of a row function's ``rows`` on ``threads`` threads: a few chunks per thread."""
    return max(1, -(-rows // (threads * CHUNKS_PER_THREAD)))


def dw_address(size: int) -> int:
    """The address of the AVX-512 ``size`` x ``size`` depthwise row function where it may run now, else 0."""
    return _avx512_address(lambda module: module.dw_address(size))


def module() -> Any:
    """The loaded C module (after :func:`available` said True)."""
    return _state["module"]


def dw_rows(size: int, arrays: tuple, ints: tuple, reals: tuple, rows: int, threads: int) -> bool:
    """A ``size`` x ``size`` (3 or 5) depthwise convolution's ``rows`` output rows with the C module's AVX-512
    row function (context as :func:`run_rows`'s: x, w (size * size taps, C), -, out, bias, add, slopes; sh, sw,
    dh, dw, pt, pl, act; alpha), on ``threads`` threads (one is fine). False, with nothing run, where it does
    not apply (see :func:`_avx512_rows`)."""
    return _rows_at(dw_address(size), arrays, ints, reals, rows, threads)


def max_pool_rows(x: np.ndarray, out: np.ndarray, ints: tuple, threads: int) -> bool:
    """Max pooling of ``x`` (B, H, W, C) into ``out`` (B, OH, OW, C), both C-contiguous float32, with the C
    module's AVX-512 row function (``ints``: fh, fw, sh, sw, dh, dw, pt, pl) on ``threads`` threads (one is
    fine). False, with nothing run, where it does not apply (see :func:`_avx512_rows`)."""
    arrays, rows = (x, _EMPTY, _EMPTY, out), out.shape[0] * out.shape[1]
    return _avx512_rows(lambda module: module.max_pool_address(), arrays, ints, (), rows, threads)


def max_pool_address() -> int:
    """The address of the AVX-512 max pooling row function where it may run now, else 0."""
    return _avx512_address(lambda module: module.max_pool_address())


_EMPTY = np.zeros(0, np.float32)


def avx512_enabled() -> bool:
    """Whether the C module's AVX-512 kernels may run now: the module built, a CPU with AVX-512F, and flags
    ``CPU_AVX512`` and ``CPU_NATIVE_SPLIT`` on (what the processor-dependent tests ask before expecting them)."""
    return _avx512_address(lambda module: module.dw_address(3)) != 0


def hold(threads: int) -> Callable[[], None] | None:
    """Keep the workers for ``threads`` threads awake (spinning, yielding to other work) from now until the returned
    function is called: a model's run, whose kernels split one after another (a sleeping worker takes 75 us or more
    to wake). None, with nothing held, for one thread or where the workers are not available."""
    if threads < 2:
        return None
    module = _state["module"] if _state["tried"] else _load()
    if module is None or not env().get("CPU_NATIVE_SPLIT"):
        return None
    module.hold(1, threads)
    released = False

    def release() -> None:
        nonlocal released
        if not released:
            released = True
            module.hold(-1, threads)

    return release


_KEPT: dict[int, Any] = {}  # id(array) -> the weakref.finalize that forgets its region


def keep_constant(array: np.ndarray) -> bool:
    """Register ``array``'s memory as values no kernel writes (a model's weights): the products whose right matrix
    lies in it keep their packed copy between calls (``csrc/pack_cache.c``), until the array is freed (a finalizer
    forgets the region first). False where the module is not loaded or the array is not a C-contiguous float32 one."""
    module = _state["module"] if _state["tried"] else _load()
    if module is None or array.dtype != np.float32 or not array.flags.c_contiguous or array.size == 0:
        return False
    held = _KEPT.get(id(array))
    if held is not None and held.alive:
        return True
    import weakref  # here: not a cost of ``import ndflow``

    address, size = array.ctypes.data, array.nbytes
    if not module.keep(address, size):
        return False

    def forget() -> None:
        _KEPT.pop(key, None)
        module.forget(address, size)

    key = id(array)
    _KEPT[key] = weakref.finalize(array, forget)
    return True


def available() -> bool:
    """Whether the native workers can run now (module built, OpenBLAS found, flag on)."""
    return _load() is not None and bool(env().get("CPU_NATIVE_SPLIT"))


def run_rows(
    address: int, arrays: tuple, ints: tuple, reals: tuple, rows: int, threads: int, chunks_per_thread: int = 4
) -> bool:
    """``fn(ctx, r0, r1)`` (the C function at ``address``) over ``rows`` output rows, in chunks shared by the
    caller and ``threads - 1`` workers; the context holds ``arrays`` (C-contiguous float32, at most 4-D; the
    caller sees that those written are writable), ``ints`` and ``reals`` (the C module's slot layout). False,
    with nothing run, where the workers are not available."""
    module = _load()
    if module is None or threads < 2 or not env().get("CPU_NATIVE_SPLIT"):
        return False
    chunk = max(1, -(-rows // (threads * chunks_per_thread)))
    module.run_rows(address, arrays, ints, reals, rows, chunk, threads)
    return True


def conv_into(
    cols_address: int,
    x: np.ndarray,
    ints: tuple,
    w2: np.ndarray,
    out: np.ndarray,
    threads: int,
    chunk: int,
    bias: np.ndarray | None = None,
    add: np.ndarray | None = None,
    act: int = 0,
    alpha: float = 0.0,
    slopes: np.ndarray | None = None,
) -> bool:
    """A convolution as im2col and one product ``out = act(cols @ w2 + bias + add)``, where the C function at
    ``cols_address`` writes each chunk's ``chunk`` rows of the column matrix (from ``x`` and ``ints``) into the
    claiming thread's buffer just before their product. False, with nothing written, where that does not apply
    (no workers, an activation the C epilogue does not have). One thread is enough where the AVX-512
    kernel runs (:func:`avx512_product`)."""
    if act not in ACTS or (act == 4 and slopes is None):
        return False
    if threads < 2 and not avx512_product(out.shape[0], w2.shape[0]):
        return False
    module = _load()
    if module is None or not env().get("CPU_NATIVE_SPLIT"):
        return False
    arrays = (w2, out, *(v for v in (bias, add, slopes) if v is not None))
    if any(v.dtype != np.float32 or not v.flags.c_contiguous for v in arrays):
        return False
    module.conv(
        cols_address, (x,), ints, w2, out, bias, add, act, threads, chunk, float(alpha), slopes if act == 4 else None
    )
    return True
