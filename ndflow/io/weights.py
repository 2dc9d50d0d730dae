"""Weights <-> bytes in TF.js's binary format: ``encode_weights``/``decode_weights``, quantization, shards.

The layout is TF.js's (``io_utils.ts``): each weight's values, little-endian, one after the other in spec
order; bool as one byte per value, complex64 as interleaved float32 (re, im), string as a 4-byte length
prefix (uint32) before each value's UTF-8 bytes. A spec with ``quantization`` stores float32 (or int32)
values as ``uint8``/``uint16`` (affine: ``value = q * scale + min``) or ``float16``, as
``tensorflowjs_converter`` writes them.
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from ..core.dtypes import from_numpy
from ..core.engine import ENGINE
from ..core.tensor import Tensor
from .types import (
    DTYPE_VALUE_SIZE_MAP,
    QUANTIZATION_DTYPES,
    WEIGHT_DTYPES,
    WeightData,
    WeightsManifestGroup,
    WeightSpec,
    concatenate_buffers,
)

NUM_BYTES_STRING_LENGTH = 4
DEFAULT_SHARD_SIZE_BYTES = 4 * 1024 * 1024  # 4 MiB: the most browsers cache per file

_LE = {"float32": "<f4", "int32": "<i4", "uint8": "u1", "uint16": "<u2", "float16": "<f2"}
_NP = {"float32": np.float32, "int32": np.int32, "uint8": np.uint8, "uint16": np.uint16, "float16": np.float16}

Quantize = str | Mapping[str, str | Sequence[str] | bool] | None


class NamedTensor(NamedTuple):
    """A weight with its name (TF.js ``NamedTensor``); values may be a Tensor or a numpy array."""

    name: str
    tensor: Any


# -- specs -------------------------------------------------------------------------------------------


def check_weight_spec(spec: Any, where: str = "weight spec") -> WeightSpec:
    """Validate one weight spec (name, shape, dtype, quantization) and return it; ValueError names the problem."""
    if not isinstance(spec, Mapping):
        raise ValueError(f"{where}: a weight spec must be an object with name, shape and dtype, got {spec!r}")
    name = spec.get("name")
    if not isinstance(name, str):
        raise ValueError(f"{where}: weight spec has no string 'name': {dict(spec)!r}")
    shape = spec.get("shape")
    if not isinstance(shape, list | tuple) or any(
        isinstance(d, bool) or not isinstance(d, int | np.integer) or d < 0 for d in shape
    ):
        raise ValueError(f"weight '{name}': 'shape' must be a list of non-negative ints, got {shape!r}")
    dtype = spec.get("dtype")
    if dtype not in WEIGHT_DTYPES:
        raise ValueError(f"weight '{name}': unknown dtype {dtype!r} (supported: {', '.join(WEIGHT_DTYPES)})")
    if "quantization" in spec:
        q = spec["quantization"]
        qdtype = q.get("dtype") if isinstance(q, Mapping) else None
        if qdtype not in QUANTIZATION_DTYPES:
            raise ValueError(
                f"weight '{name}' has unknown quantization dtype {qdtype!r}; "
                "supported quantization dtypes are 'uint8', 'uint16' and 'float16'"
            )
        if qdtype == "float16" and dtype != "float32":
            raise ValueError(
                f"weight '{name}' is quantized with float16, which only supports weights of dtype float32, not {dtype}"
            )
        if qdtype in ("uint8", "uint16"):
            for key in ("min", "scale"):
                if isinstance(q.get(key), bool) or not isinstance(q.get(key), int | float):
                    raise ValueError(
                        f"weight '{name}' with quantization {qdtype} has no numeric '{key}' "
                        f"(affine quantization needs 'min' and 'scale'), got {q.get(key)!r}"
                    )
            if dtype not in ("float32", "int32"):
                raise ValueError(f"weight '{name}': {qdtype} quantization supports float32 and int32, not {dtype}")
    return spec  # type: ignore[return-value]


def _size(spec: WeightSpec) -> int:
    return math.prod(int(d) for d in spec["shape"])


def _describe(spec: WeightSpec) -> str:
    stored = spec["quantization"]["dtype"] if "quantization" in spec else spec["dtype"]
    return f"weight '{spec['name']}' (shape {list(spec['shape'])}, {spec['dtype']}, stored as {stored})"


def weight_byte_length(spec: WeightSpec, data: memoryview | bytes, offset: int = 0) -> int:
    """Bytes that ``spec``'s weight takes in ``data`` starting at ``offset`` (strings: read from the data)."""
    size = _size(spec)
    if "quantization" in spec:
        return size * DTYPE_VALUE_SIZE_MAP[spec["quantization"]["dtype"]]
    if spec["dtype"] != "string":
        return size * DTYPE_VALUE_SIZE_MAP[spec["dtype"]]
    view = memoryview(data)
    pos = offset
    for i in range(size):
        if pos + NUM_BYTES_STRING_LENGTH > len(view):
            raise ValueError(
                f"{_describe(spec)}: the length of string value {i} lies past the end of the weight data "
                f"(offset {pos}, data has {len(view)} bytes); the data does not match the specs"
            )
        length = int.from_bytes(view[pos : pos + NUM_BYTES_STRING_LENGTH], "little")
        pos += NUM_BYTES_STRING_LENGTH + length
        if pos > len(view):
            raise ValueError(
                f"{_describe(spec)}: string value {i} ({length} bytes) runs past the end of the weight data "
                f"({len(view)} bytes); the data does not match the specs"
            )
    return pos - offset


def weights_byte_length(specs: Sequence[WeightSpec], data: memoryview | bytes, where: str = "weight data") -> int:
    """Bytes the weights of ``specs`` take at the start of ``data``; raises naming the first one that does not fit."""
    view = memoryview(data)
    offset = 0
    for spec in specs:
        check_weight_spec(spec)
        n = weight_byte_length(spec, view, offset)
        if offset + n > len(view):
            raise ValueError(
                f"{where}: {_describe(spec)} needs {n} bytes at offset {offset}, but the data has only "
                f"{len(view)} bytes (its byte size does not match its shape, or data is missing)"
            )
        offset += n
    return offset


def max_weight_bytes() -> int:
    """The flag ``MAX_WEIGHT_BYTES``: the most bytes one weight of a loaded model may take (default 4 GiB)."""
    from ..core.flags import env

    return int(env().get_number("MAX_WEIGHT_BYTES"))


def check_weight_size(spec: WeightSpec, where: str = "weight spec") -> int:
    """The bytes a checked spec's weight takes at least (strings: 4 per value); ValueError naming the weight when
    that is over ``MAX_WEIGHT_BYTES`` (so a manifest cannot ask for more than that per weight)."""
    per_value = (
        DTYPE_VALUE_SIZE_MAP[spec["quantization"]["dtype"]]
        if "quantization" in spec
        else NUM_BYTES_STRING_LENGTH
        if spec["dtype"] == "string"
        else DTYPE_VALUE_SIZE_MAP[spec["dtype"]]
    )
    nbytes = _size(spec) * per_value
    limit = max_weight_bytes()
    if nbytes > limit:
        raise ValueError(
            f"{where}: {_describe(spec)} takes {nbytes} bytes ({_size(spec)} values), over the limit of {limit} "
            "bytes per weight (flag MAX_WEIGHT_BYTES)"
        )
    return nbytes


def group_byte_range(specs: Sequence[WeightSpec]) -> tuple[int, int | None]:
    """(fewest, most) bytes the weights of ``specs`` take, from the specs alone (quantization-aware): equal
    unless a string weight is among them, whose size is known only from the data (then most is None)."""
    low, exact = 0, True
    for spec in specs:
        low += check_weight_size(spec)
        exact = exact and spec["dtype"] != "string"
    return low, (low if exact else None)


def get_weight_specs(manifest: Sequence[WeightsManifestGroup]) -> list[WeightSpec]:
    """All weight specs of a weights manifest, in order (TF.js ``getWeightSpecs``)."""
    return [spec for group in manifest for spec in group["weights"]]


# -- quantization ------------------------------------------------------------------------------------


def quantize_array(values: np.ndarray, dtype: str) -> tuple[np.ndarray, dict[str, Any]]:
    """Quantize float32 values as ``tensorflowjs_converter`` does: affine uint8/uint16 with a zero-exact nudged
    range (returns the quantization metadata ``{"min", "scale"}``) or float16 (no metadata)."""
    if dtype == "float16":
        with np.errstate(over="ignore"):  # beyond float16's range: Infinity, as numpy and the converter do
            return np.asarray(values, dtype=np.float32).astype(np.float16), {}
    if dtype not in ("uint8", "uint16"):
        raise ValueError(f"unknown quantization dtype {dtype!r}; supported: 'uint8', 'uint16', 'float16'")
    data = np.asarray(values, dtype=np.float64)
    if data.size == 0:
        return np.zeros(data.shape, _NP[dtype]), {"min": 0.0, "scale": 1.0}
    if not np.all(np.isfinite(data)):
        raise ValueError(f"cannot quantize to {dtype}: the values hold NaN or Infinity")
    lo, hi = float(data.min()), float(data.max())
    if lo == hi:  # a single value: every entry is 0 * 1.0 + min
        return np.zeros(data.shape, _NP[dtype]), {"min": lo, "scale": 1.0}
    quant_max = float(np.iinfo(_NP[dtype]).max)
    scale = (hi - lo) / quant_max
    if lo <= 0.0 <= hi:  # nudge the range so that 0 is exactly representable
        nudged_min = -float(np.round(-lo / scale)) * scale
        nudged_max = quant_max * scale + nudged_min
    else:
        nudged_min, nudged_max = lo, hi
    q = np.round((np.clip(data, nudged_min, nudged_max) - nudged_min) / scale)
    return np.clip(q, 0, quant_max).astype(_NP[dtype]), {"min": nudged_min, "scale": scale}


def dequantize_array(q: np.ndarray, quantization: Mapping[str, Any], dtype: str = "float32") -> np.ndarray:
    """Quantized values back to ``dtype`` as TF.js does (float32 ``q * scale + min``; int32 rounds half up)."""
    qdtype = quantization["dtype"]
    if qdtype == "float16":
        return np.asarray(q, dtype=np.float16).astype(np.float32)
    real = np.asarray(q, dtype=np.float64) * float(quantization["scale"]) + float(quantization["min"])
    if dtype == "int32":
        return np.floor(real + 0.5).astype(np.int32)  # JS Math.round
    return real.astype(np.float32)


def _quantization_for(names: list[str], quantize: Quantize) -> dict[str, str]:
    """Map each weight name to its quantization dtype: one dtype for all, or {dtype: patterns | True}."""
    if quantize is None:
        return {}
    if isinstance(quantize, str):
        if quantize not in QUANTIZATION_DTYPES:
            raise ValueError(f"unknown quantization dtype {quantize!r}; supported: 'uint8', 'uint16', 'float16'")
        return dict.fromkeys(names, quantize)
    out: dict[str, str] = {}
    fallthrough = None
    for qdtype, patterns in quantize.items():
        if qdtype not in QUANTIZATION_DTYPES:
            raise ValueError(f"unknown quantization dtype {qdtype!r}; supported: 'uint8', 'uint16', 'float16'")
        if patterns is True:
            if fallthrough is not None:
                raise ValueError("more than one quantization fallthrough (True) given; exactly one is supported")
            fallthrough = qdtype
            continue
        for pattern in [patterns] if isinstance(patterns, str) else list(patterns or []):
            for name in fnmatch.filter(names, pattern):
                if out.get(name, qdtype) != qdtype:
                    raise ValueError(f"two quantization dtypes {out[name]}, {qdtype} match the weight '{name}'")
                out[name] = qdtype
    if fallthrough is not None:
        for name in names:
            out.setdefault(name, fallthrough)
    return out


# -- encode ------------------------------------------------------------------------------------------


def _named_items(tensors: Any) -> list[tuple[str, Any]]:
    if isinstance(tensors, Mapping):
        return list(tensors.items())
    items = []
    for entry in tensors:
        if isinstance(entry, Mapping):
            items.append((entry["name"], entry["tensor"]))
        elif isinstance(entry, tuple) and len(entry) == 2:
            items.append((entry[0], entry[1]))
        else:
            items.append((entry.name, entry.tensor))
    return items


def _values_of(name: str, value: Any) -> tuple[np.ndarray | list[bytes], tuple[int, ...], str]:
    """(flat values, shape, dtype) of a Tensor or numpy array; strings as a list of bytes."""
    if isinstance(value, Tensor):
        if value.dtype == "string":
            return value.bytes_sync(), tuple(value.shape), "string"
        return np.asarray(value.data_sync()), tuple(value.shape), value.dtype
    array = np.asarray(value)
    dtype = from_numpy(array.dtype)
    if dtype == "string":
        flat = [v if isinstance(v, bytes) else str(v).encode("utf-8") for v in array.reshape(-1).tolist()]
        return flat, array.shape, "string"
    return array.reshape(-1), array.shape, dtype


def _encode_values(values: np.ndarray | list[bytes], dtype: str) -> bytes:
    if dtype == "string":
        parts = []
        for v in values:
            parts.append(len(v).to_bytes(NUM_BYTES_STRING_LENGTH, "little"))
            parts.append(bytes(v))
        return b"".join(parts)
    if dtype == "bool":
        return np.asarray(values).astype(np.uint8).tobytes()
    if dtype == "complex64":
        return np.asarray(values, dtype=np.complex64).astype("<c8").tobytes()
    return np.asarray(values).astype(_LE[dtype]).tobytes()


def encode_weights(
    tensors: Mapping[str, Any] | Iterable[Any], group: str | None = None, quantize: Quantize = None
) -> tuple[bytes, list[WeightSpec]]:
    """Weights (a dict name -> Tensor/ndarray, or NamedTensors) to ``(bytes, specs)`` as TF.js's
    ``encodeWeights``; ``quantize`` ('uint8'|'uint16'|'float16', or {dtype: name patterns | True}) stores
    float32 weights quantized as the converter does. The tensors are not disposed."""
    items = _named_items(tensors)
    names = [name for name, _ in items]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise ValueError(f"encode_weights: duplicate weight names {dup}")
    qmap = _quantization_for(names, quantize)
    parts: list[bytes] = []
    specs: list[WeightSpec] = []
    for name, value in items:
        if not isinstance(name, str):
            raise TypeError(f"encode_weights: weight names must be str, got {type(name).__name__}")
        values, shape, dtype = _values_of(name, value)
        if dtype not in WEIGHT_DTYPES:
            raise ValueError(f"Unsupported dtype in weight '{name}': {dtype}")
        spec: WeightSpec = {"name": name, "shape": [int(d) for d in shape], "dtype": dtype}
        qdtype = qmap.get(name)
        if qdtype is not None and dtype == "float32":
            try:
                q, meta = quantize_array(np.asarray(values, dtype=np.float32), qdtype)
            except ValueError as exc:
                raise ValueError(f"weight '{name}': {exc}") from None
            spec["quantization"] = {"dtype": qdtype, **meta, "original_dtype": "float32"}
            parts.append(q.astype(_LE[qdtype]).tobytes())
        else:
            parts.append(_encode_values(values, dtype))
        if group is not None:
            spec["group"] = group
        specs.append(spec)
    return b"".join(parts), specs


# -- decode ------------------------------------------------------------------------------------------


def _decode_one(spec: WeightSpec, view: memoryview, offset: int, n: int) -> np.ndarray:
    shape = tuple(int(d) for d in spec["shape"])
    size = _size(spec)
    raw = view[offset : offset + n]
    if "quantization" in spec:
        q = spec["quantization"]
        stored = np.frombuffer(raw, dtype=_LE[q["dtype"]], count=size)
        return dequantize_array(stored, q, spec["dtype"]).reshape(shape)
    dtype = spec["dtype"]
    if dtype == "string":
        out = np.empty(size, dtype=object)
        pos = 0
        for i in range(size):
            length = int.from_bytes(raw[pos : pos + NUM_BYTES_STRING_LENGTH], "little")
            pos += NUM_BYTES_STRING_LENGTH
            b = bytes(raw[pos : pos + length])
            pos += length
            try:
                out[i] = b.decode("utf-8")
            except UnicodeDecodeError:
                out[i] = b  # arbitrary bytes (e.g. an encoded image) stay bytes
        return out.reshape(shape)
    if dtype == "bool":
        return (np.frombuffer(raw, dtype=np.uint8, count=size) != 0).reshape(shape)
    if dtype == "complex64":
        return np.frombuffer(raw, dtype="<c8", count=size).astype(np.complex64).reshape(shape)
    return np.frombuffer(raw, dtype=_LE[dtype], count=size).astype(_NP[dtype]).reshape(shape)


def decode_arrays(buffer: WeightData, specs: Sequence[WeightSpec], where: str = "weight data") -> dict[str, np.ndarray]:
    """Decode weights to numpy arrays (strings: object arrays of str, or bytes when not UTF-8); the data
    must hold exactly the weights of ``specs``, else a ValueError names the weight that does not fit."""
    data = concatenate_buffers(buffer) if isinstance(buffer, list | tuple) else buffer
    view = memoryview(data).cast("B")
    total = weights_byte_length(specs, view, where)
    if total != len(view):
        last = f" after the last weight '{specs[-1]['name']}'" if specs else ""
        raise ValueError(
            f"{where}: {len(view) - total} bytes left over{last}: the specs describe {total} bytes but the data "
            f"has {len(view)} (a weight's byte size does not match its shape, or the data does not belong to the specs)"
        )
    out: dict[str, np.ndarray] = {}
    offset = 0
    for spec in specs:
        n = weight_byte_length(spec, view, offset)
        out[spec["name"]] = _decode_one(spec, view, offset, n)
        offset += n
    return out


def arrays_to_tensors(arrays: Mapping[str, np.ndarray], specs: Sequence[WeightSpec]) -> dict[str, Tensor]:
    """Tensors of each spec's dtype from decoded arrays (all created, or none when one fails)."""
    dtypes = {spec["name"]: spec["dtype"] for spec in specs}
    out: dict[str, Tensor] = {}
    try:
        for name, array in arrays.items():
            out[name] = ENGINE.make_tensor(array, tuple(array.shape), dtypes[name])
    except BaseException:
        for t in out.values():
            t.dispose()
        raise
    return out


def decode_weights(buffer: WeightData, specs: Sequence[WeightSpec]) -> dict[str, Tensor]:
    """Bytes and specs to a dict name -> Tensor (TF.js ``decodeWeights``, quantized weights dequantized)."""
    return arrays_to_tensors(decode_arrays(buffer, specs), specs)


# -- shards ------------------------------------------------------------------------------------------


def shard_file_name(group_index: int, shard_index: int, num_shards: int) -> str:
    """``group{g}-shard{i}of{n}.bin`` (1-based), the converter's shard naming."""
    return f"group{group_index}-shard{shard_index}of{num_shards}.bin"


def split_weight_data(data: WeightData, shard_size_bytes: int = DEFAULT_SHARD_SIZE_BYTES) -> list[bytes]:
    """Cut weight data into shards of at most ``shard_size_bytes`` (the last may be smaller; none when empty)."""
    if isinstance(shard_size_bytes, bool) or not isinstance(shard_size_bytes, int) or shard_size_bytes <= 0:
        raise ValueError(f"shard_size_bytes must be a positive int, got {shard_size_bytes!r}")
    blob = concatenate_buffers(data)
    return [blob[i : i + shard_size_bytes] for i in range(0, len(blob), shard_size_bytes)]


def shard_weights(
    specs: Sequence[WeightSpec],
    data: WeightData,
    shard_size_bytes: int = DEFAULT_SHARD_SIZE_BYTES,
    group_index: int = 1,
) -> tuple[list[WeightsManifestGroup], dict[str, bytes]]:
    """A one-group weights manifest and its shard files ``{file name: bytes}`` for encoded weights."""
    shards = split_weight_data(data, shard_size_bytes)
    paths = [shard_file_name(group_index, i + 1, len(shards)) for i in range(len(shards))]
    manifest = [{"paths": paths, "weights": [dict(spec) for spec in specs]}]
    return manifest, dict(zip(paths, shards, strict=True))
