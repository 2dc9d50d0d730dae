"""``nf.util``: TF.js's ``tf.util`` helpers in snake_case, on plain Python values.

TF.js's typed arrays are numpy arrays here (``Float32Array`` -> ``float32``, ``Int32Array`` -> ``int32``,
``Uint8Array`` -> ``uint8``, ``Uint32Array`` -> ``uint32``) and its ``Uint8Array`` of encoded text is
``bytes``. Functions that change their argument in TF.js (``shuffle``, ``shuffle_combo``, ``swap``) change
lists and numpy arrays in place here too. ``assert`` is a Python keyword: call ``nf.util.assert_`` (or
``getattr(nf.util, "assert")``). The clock, text, network and typed-array helpers are in ``core/util_io.py``
and re-exported here.

Left out, with why: ``fingerPrint64`` (Farmhash; TensorFlow's string hash is ``nf.string_to_hash_bucket_fast``
and the cpu backend's ``fingerprint64``, which this low layer may not import), ``getTypedArrayFromDType``'s
WebGL/WebGPU data and ``isTypedArray``'s browser fallback (no such objects in Python).
"""

from __future__ import annotations

import builtins
import math
import random
from collections.abc import Callable, MutableSequence, Sequence
from typing import Any, NamedTuple

import numpy as np

from .util_io import (
    convert_backend_values_and_array_buffer,
    create_scalar_value,
    decode_string,
    encode_string,
    fetch,
    flatten,
    is_promise,
    is_typed_array,
    now,
    repeated_try,
    to_typed_array,
)

Shape = Sequence[int]
Message = str | Callable[[], str]

__all__ = [
    "arrays_equal", "arrays_equal_with_null", "assert_", "assert_non_negative_integer_dimensions",
    "assert_non_null", "assert_shapes_match", "bytes_from_string_array", "bytes_per_element",
    "check_conversion_for_errors", "clamp", "compute_strides", "convert_backend_values_and_array_buffer",
    "create_scalar_value", "create_shuffled_indices", "decode_string", "dist_squared", "encode_string", "fetch",
    "flatten", "get_array_from_dtype", "get_typed_array_from_dtype", "has_encoding_loss", "hex_to_long",
    "index_to_loc", "infer_dtype", "infer_from_implicit_shape", "is_boolean", "is_function", "is_int", "is_number",
    "is_promise", "is_scalar_shape", "is_string", "is_typed_array", "is_valid_dtype", "loc_to_index",
    "make_ones_typed_array", "make_zeros_nested_typed_array", "make_zeros_typed_array", "nearest_divisor",
    "nearest_larger_even", "now", "parse_axis_param", "rand_uniform", "repeated_try", "right_pad", "shuffle",
    "shuffle_combo", "size_from_shape", "size_to_squarish_shape", "squeeze_shape", "sum", "swap", "tanh",
    "to_nested_array", "to_typed_array", "SqueezeResult",
]  # fmt: skip

_TYPED = {"float32": np.float32, "complex64": np.float32, "int32": np.int32, "bool": np.uint8}


# -- checks ------------------------------------------------------------------------------------------------
def assert_(expr: object, msg: Message) -> None:
    """Raise ``AssertionError(msg)`` when ``expr`` is falsy; ``msg`` is a string or a function making it (called
    only on failure, as in TF.js). Also reachable as ``getattr(nf.util, "assert")``."""
    if not expr:
        raise AssertionError(msg if isinstance(msg, str) else msg())


def assert_shapes_match(shape_a: Shape, shape_b: Shape, error_message_prefix: str = "") -> None:
    """Raise ``AssertionError`` unless the two shapes are equal."""
    assert_(
        arrays_equal(shape_a, shape_b),
        lambda: f"{error_message_prefix} Shapes {_js_list(shape_a)} and {_js_list(shape_b)} must match",
    )


def assert_non_null(a: object) -> None:
    """Raise ``AssertionError`` when ``a`` is ``None`` (TF.js: null or undefined)."""
    assert_(a is not None, "The input to the tensor constructor must be a non-null value.")


def assert_non_negative_integer_dimensions(shape: Shape) -> None:
    """Raise ``AssertionError`` unless every dimension is an integer >= 0."""
    for dim in shape:
        assert_(
            _is_integer(dim) and dim >= 0,
            lambda: f"Tensor must have a shape comprised of positive integers but got shape [{_js_list(shape)}].",
        )


def check_conversion_for_errors(vals: Sequence[float] | np.ndarray, dtype: str) -> None:
    """Raise ``ValueError`` when a value is NaN or infinite (TF.js's debug-mode upload check)."""
    for num in np.asarray(vals, dtype=np.float64).reshape(-1):
        if not math.isfinite(num):
            raise ValueError(f"A tensor of type {dtype} being uploaded contains {_js_number(num)}.")


# -- random ------------------------------------------------------------------------------------------------
def shuffle(array: MutableSequence[Any] | np.ndarray) -> None:
    """Shuffle a list or numpy array in place (Fisher-Yates, as TF.js; unseeded: Python's ``random``)."""
    counter = len(array)
    while counter > 0:
        index = int(random.random() * counter)
        counter -= 1
        swap(array, counter, index)


def shuffle_combo(array: MutableSequence[Any] | np.ndarray, array2: MutableSequence[Any] | np.ndarray) -> None:
    """Shuffle two sequences of one length in place with the same permutation."""
    if len(array) != len(array2):
        raise ValueError(
            f"shuffle_combo: the arrays must have one length to be shuffled together, got {len(array)} and "
            f"{len(array2)}"
        )
    counter = len(array)
    while counter > 0:
        index = int(random.random() * counter)
        counter -= 1
        swap(array, counter, index)
        swap(array2, counter, index)


def create_shuffled_indices(n: int) -> np.ndarray:
    """``0 .. n-1`` in random order, as a uint32 numpy array (TF.js: ``Uint32Array``)."""
    if not _is_integer(n) or n < 0:
        raise ValueError(f"create_shuffled_indices: argument 'n' must be an integer >= 0, got {n!r}")
    indices = np.arange(int(n), dtype=np.uint32)
    shuffle(indices)
    return indices


def rand_uniform(a: float, b: float) -> float:
    """A random float between ``a`` and ``b``."""
    r = random.random()
    return b * r + (1 - r) * a


def swap(obj: MutableSequence[Any] | np.ndarray, left: int, right: int) -> None:
    """Exchange ``obj[left]`` and ``obj[right]`` in place."""
    obj[left], obj[right] = obj[right], obj[left]


# -- numbers -----------------------------------------------------------------------------------------------
def clamp(min: float, x: float, max: float) -> float:  # noqa: A002 - TF.js's argument names
    """``x`` limited to ``[min, max]``."""
    return _max(min, _min(x, max))


def nearest_larger_even(val: int) -> int:
    """``val`` if it is even, else ``val + 1``."""
    return val if val % 2 == 0 else val + 1


def sum(arr: Sequence[float]) -> float:  # noqa: A001 - TF.js's name
    """The sum of a sequence of numbers, added left to right."""
    total = 0
    for value in arr:
        total += value
    return total


def dist_squared(a: Sequence[float], b: Sequence[float]) -> float:
    """The squared Euclidean distance of two vectors (over ``a``'s length)."""
    result = 0.0
    for i in range(len(a)):
        diff = float(a[i]) - float(b[i])
        result += diff * diff
    return result


def is_int(a: float) -> bool:
    """Whether a number has no fractional part."""
    return math.isfinite(a) and a % 1 == 0


def tanh(x: float) -> float:
    """The hyperbolic tangent of a number."""
    return math.tanh(x)


def nearest_divisor(size: int, start: int) -> int:
    """The smallest divisor of ``size`` that is >= ``start`` (``size`` itself if none below it)."""
    for i in range(start, size):
        if size % i == 0:
            return i
    return size


def size_to_squarish_shape(size: int) -> list[int]:
    """``[width, height]`` of a near-square rectangle holding ``size`` elements."""
    width = math.ceil(math.sqrt(size))
    return [width, math.ceil(size / width)] if width else [0, 0]


def right_pad(a: str, size: int) -> str:
    """``a`` padded with spaces on the right to ``size`` characters."""
    return a if size <= len(a) else a + " " * (size - len(a))


def hex_to_long(hex: str) -> int:  # noqa: A002 - TF.js's argument name
    """A hexadecimal string as an unsigned integer (TF.js returns a ``Long``)."""
    try:
        return int(hex, 16)
    except (TypeError, ValueError):
        raise ValueError(f"hex_to_long: argument 'hex' must be a hexadecimal string, got {hex!r}") from None


# -- shapes ------------------------------------------------------------------------------------------------
def size_from_shape(shape: Shape) -> int:
    """The number of elements of a tensor of ``shape`` (1 for ``[]``)."""
    size = 1
    for dim in shape:
        size *= dim
    return size


def is_scalar_shape(shape: Shape) -> bool:
    """Whether ``shape`` is the scalar shape ``[]``."""
    return len(shape) == 0


def arrays_equal(n1: Sequence[Any] | None, n2: Sequence[Any] | None) -> bool:
    """Whether two sequences have the same length and equal elements (``None`` equals only ``None``)."""
    if n1 is n2:
        return True
    if n1 is None or n2 is None or len(n1) != len(n2):
        return False
    return all(_strict_equal(x, y) for x, y in zip(n1, n2, strict=True))


def arrays_equal_with_null(n1: Sequence[Any] | None, n2: Sequence[Any] | None) -> bool:
    """As :func:`arrays_equal`, but a ``None`` element matches anything (unknown dimensions)."""
    if n1 is n2:
        return True
    if n1 is None or n2 is None or len(n1) != len(n2):
        return False
    return all(x is None or y is None or _strict_equal(x, y) for x, y in zip(n1, n2, strict=True))


def infer_from_implicit_shape(shape: Shape, size: int) -> list[int]:
    """``shape`` with its one ``-1`` replaced so that it holds ``size`` elements."""
    product, implicit = 1, -1
    for i, dim in enumerate(shape):
        if dim >= 0:
            product *= dim
        elif dim == -1:
            if implicit != -1:
                raise ValueError(f"Shapes can only have 1 implicit size. Found -1 at dim {implicit} and dim {i}")
            implicit = i
        else:
            raise ValueError(f"Shapes can not be < 0. Found {dim} at dim {i}")
    if implicit == -1:
        if size > 0 and size != product:
            raise ValueError(f"Size({size}) must match the product of shape {_js_list(shape)}")
        return list(shape)
    if product == 0:
        raise ValueError(f"Cannot infer the missing size in [{_js_list(shape)}] when there are 0 elements")
    if size % product != 0:
        raise ValueError(f"The implicit shape can't be a fractional number. Got {size} / {product}")
    new_shape = list(shape)
    new_shape[implicit] = size // product
    return new_shape


def parse_axis_param(axis: int | Sequence[int] | None, shape: Shape) -> list[int]:
    """The axes ``axis`` names in a tensor of ``shape``, negatives counted from the end (``None``: all)."""
    rank = len(shape)
    axes = list(range(rank)) if axis is None else [axis] if not isinstance(axis, Sequence) else list(axis)
    assert_(
        all(-rank <= ax < rank for ax in axes),
        lambda: f"All values in axis param must be in range [-{rank}, {rank}) but got axis {_js_list(axes)}",
    )
    assert_(
        all(_is_integer(ax) for ax in axes),
        lambda: f"All values in axis param must be integers but got axis {_js_list(axes)}",
    )
    return [int(a) + rank if a < 0 else int(a) for a in axes]


class SqueezeResult(NamedTuple):
    """What :func:`squeeze_shape` returns (TF.js: ``{newShape, keptDims}``)."""

    new_shape: list[int]
    kept_dims: list[int]


def squeeze_shape(shape: Shape, axis: Sequence[int] | int | None = None) -> SqueezeResult:
    """The shape without its size-1 dimensions (only those in ``axis`` when given) and the kept dimensions."""
    axes = None if axis is None or (isinstance(axis, Sequence) and len(axis) == 0) else parse_axis_param(axis, shape)
    if axes is not None:
        axes.sort()
    new_shape: list[int] = []
    kept: list[int] = []
    j = 0
    for i, dim in enumerate(shape):
        if axes is not None:
            current = axes[j] if j < len(axes) else None
            if current == i and dim != 1:
                raise ValueError(f"Can't squeeze axis {i} since its dim '{dim}' is not 1")
            if (current is None or current > i) and dim == 1:
                new_shape.append(dim)
                kept.append(i)
            if current is not None and current <= i:
                j += 1
        if dim != 1:
            new_shape.append(dim)
            kept.append(i)
    return SqueezeResult(new_shape, kept)


def compute_strides(shape: Shape) -> list[int]:
    """The row-major strides of ``shape``, without the last (always 1) one."""
    rank = len(shape)
    if rank < 2:
        return []
    strides = [0] * (rank - 1)
    strides[rank - 2] = shape[rank - 1]
    for i in range(rank - 3, -1, -1):
        strides[i] = strides[i + 1] * shape[i + 1]
    return strides


def loc_to_index(locs: Sequence[int], rank: int, strides: Sequence[int]) -> int:
    """The flat index of a multi-dimensional location."""
    if rank == 0:
        return 0
    if rank == 1:
        return locs[0]
    index = locs[-1]
    for i in range(len(locs) - 1):
        index += strides[i] * locs[i]
    return index


def index_to_loc(index: int, rank: int, strides: Sequence[int]) -> list[int]:
    """The multi-dimensional location of a flat index."""
    if rank == 0:
        return []
    if rank == 1:
        return [index]
    locs = [0] * rank
    for i in range(rank - 1):
        locs[i] = index // strides[i]
        index -= locs[i] * strides[i]
    locs[-1] = index
    return locs


# -- dtypes ------------------------------------------------------------------------------------------------
def is_valid_dtype(dtype: object) -> bool:
    """Whether ``dtype`` names one of TF.js's dtypes."""
    return dtype in ("bool", "complex64", "float32", "int32", "string")


def has_encoding_loss(old_type: str, new_type: str) -> bool:
    """Whether casting ``old_type`` values to ``new_type`` can lose information."""
    if new_type == "complex64":
        return False
    if new_type == "float32" and old_type != "complex64":
        return False
    if new_type == "int32" and old_type not in ("float32", "complex64"):
        return False
    return not (new_type == "bool" and old_type == "bool")


def bytes_per_element(dtype: str) -> int:
    """Bytes one element of a numeric dtype takes (no fixed size for ``string``)."""
    sizes = {"float32": 4, "int32": 4, "complex64": 8, "bool": 1}
    if dtype not in sizes:
        raise ValueError(f"bytes_per_element: unknown dtype {dtype!r} (expected one of {', '.join(sizes)})")
    return sizes[dtype]


def bytes_from_string_array(arr: Sequence[bytes] | None) -> int:
    """The total length of a list of encoded strings."""
    return 0 if arr is None else int(builtins.sum(len(x) for x in arr))


def is_string(value: object) -> bool:
    """Whether ``value`` is a ``str``."""
    return isinstance(value, str)


def is_boolean(value: object) -> bool:
    """Whether ``value`` is a ``bool`` (numpy's included)."""
    return isinstance(value, bool | np.bool_)


def is_number(value: object) -> bool:
    """Whether ``value`` is a real number (``bool`` is not, as in JS)."""
    return isinstance(value, int | float | np.integer | np.floating) and not is_boolean(value)


def is_function(f: object) -> bool:
    """Whether ``f`` can be called."""
    return callable(f)


def infer_dtype(values: Any) -> str:
    """The dtype TF.js would give a tensor of ``values``: the first element decides for nested lists; Python
    numbers are float32, strings (and bytes) string, booleans bool; numpy arrays by their kind."""
    if isinstance(values, list | tuple):
        return infer_dtype(values[0]) if values else "float32"
    if isinstance(values, np.ndarray):
        kind = values.dtype.kind
        return {"f": "float32", "i": "int32", "u": "int32", "b": "bool", "c": "complex64"}.get(kind, "string")
    if is_number(values):
        return "float32"
    if isinstance(values, str | bytes):
        return "string"
    if is_boolean(values):
        return "bool"
    return "float32"


def get_array_from_dtype(dtype: str | None, size: int) -> np.ndarray | list[None]:
    """A zero-filled array of ``size`` elements for ``dtype`` (a list of ``None`` for ``string``)."""
    if dtype == "string":
        return [None] * size
    if dtype is not None and dtype not in ("float32", "int32", "bool"):
        raise ValueError(f"get_array_from_dtype: unknown data type {dtype!r}")
    return np.zeros(size, _TYPED[dtype or "float32"])


get_typed_array_from_dtype = get_array_from_dtype


def make_zeros_typed_array(size: int, dtype: str | None = "float32") -> np.ndarray:
    """A zero-filled numpy array of ``size`` elements in ``dtype``'s storage (complex64: its float32 parts)."""
    if (dtype or "float32") not in _TYPED:
        raise ValueError(f"make_zeros_typed_array: unknown data type {dtype!r}")
    return np.zeros(size, _TYPED[dtype or "float32"])


def make_ones_typed_array(size: int, dtype: str | None = "float32") -> np.ndarray:
    """A one-filled numpy array of ``size`` elements in ``dtype``'s storage."""
    array = make_zeros_typed_array(size, dtype)
    array[:] = 1
    return array


def to_nested_array(shape: Shape, a: Sequence[Any] | np.ndarray, is_complex: bool = False) -> Any:
    """Flat values as nested lists of ``shape`` (complex: innermost lists of interleaved real, imaginary values)."""
    values = a.tolist() if isinstance(a, np.ndarray) else list(a)
    if len(shape) == 0:
        return values[0]
    size = size_from_shape(shape) * (2 if is_complex else 1)
    if size == 0:
        return []
    if size != len(values):
        tail = " for a complex tensor" if is_complex else ""
        raise ValueError(f"[{_js_list(shape)}] does not match the input size {len(values)}{tail}.")
    return _nest(0, list(shape), values, is_complex)


def make_zeros_nested_typed_array(shape: Shape, dtype: str | None = "float32") -> Any:
    """Zeros as nested lists of ``shape``."""
    if (dtype or "float32") not in ("float32", "int32", "bool"):
        raise ValueError(f"make_zeros_nested_typed_array: unknown data type {dtype!r}")
    return to_nested_array(shape, np.zeros(size_from_shape(shape), _TYPED[dtype or "float32"]))


# -- helpers -----------------------------------------------------------------------------------------------
_min, _max = min, max


def _nest(offset: int, shape: list[int], values: list[Any], is_complex: bool) -> list[Any]:
    n, mult = shape[0], 2 if is_complex else 1
    if len(shape) == 1:  # complex: the innermost list holds the interleaved (real, imaginary) pairs
        return values[offset : offset + n * mult]
    step = size_from_shape(shape[1:]) * mult
    return [_nest(offset + i * step, shape[1:], values, is_complex) for i in range(n)]


def _is_integer(x: object) -> bool:
    if isinstance(x, bool | np.bool_):
        return False
    if isinstance(x, int | np.integer):
        return True
    return isinstance(x, float | np.floating) and math.isfinite(x) and float(x).is_integer()


def _strict_equal(x: Any, y: Any) -> bool:
    if isinstance(x, bool | np.bool_) != isinstance(y, bool | np.bool_):
        return False
    try:
        return bool(x == y)
    except (TypeError, ValueError):
        return False


def _js_number(x: float) -> str:
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def _js_list(values: Sequence[Any]) -> str:
    return ",".join(_js_number(v) if isinstance(v, int | float) and not isinstance(v, bool) else str(v) for v in values)


globals()["assert"] = assert_
