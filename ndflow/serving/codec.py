"""TensorFlow Serving's JSON <-> numpy: a model's signature, the row format (``"instances"``) and the columnar
format (``"inputs"``) of a predict request checked against it, ``{"b64": ...}`` values, and the response bodies
(``"predictions"`` / ``"outputs"``) and the metadata's ``signature_def``.

Every mistake in a request is a :class:`~ndflow.serving.errors.ServingError` (400) that names the input, the
instance and what was expected, raised before any tensor is made."""

from __future__ import annotations

import base64
import binascii
import functools
import json
import math
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import invalid

#: ndflow dtypes and TensorFlow's names for them.
DT_NAMES = {"float32": "DT_FLOAT", "int32": "DT_INT32", "bool": "DT_BOOL", "string": "DT_STRING",
            "complex64": "DT_COMPLEX64"}  # fmt: skip
_NUMPY = {"float32": np.float32, "int32": np.int32, "bool": np.bool_, "complex64": np.complex64}
_INT32 = np.iinfo(np.int32)
SIGNATURE_NAME = "serving_default"
_ORJSON: list[Any] = []


def loads(raw: bytes) -> Any:
    """A request body parsed. ``{"instances": ARRAY}`` with a rectangular array of numbers (the common predict
    request) is read straight into a numpy float64 array where pysimdjson is installed (:func:`_fast_instances`:
    5-9x faster than making the nested lists); anything else with orjson where it is installed (4x faster than the
    standard parser on arrays of numbers), else, and for what orjson refuses (the ``NaN`` and ``Infinity`` tokens
    that TF Serving's JSON allows), the standard parser (``ValueError`` for malformed JSON)."""
    fast = _fast_instances(raw)
    if fast is not None:
        return {"instances": fast}
    if not _ORJSON:
        try:
            import orjson
        except ImportError:
            orjson = None
        _ORJSON.append(orjson)
    fast = _ORJSON[0]
    if fast is not None:
        try:
            return fast.loads(raw)
        except fast.JSONDecodeError:
            pass
    return json.loads(raw)


_SIMDJSON: list[Any] = []
_PARSERS = threading.local()
_PREFIX = re.compile(rb'\A[ \t\r\n]*\{[ \t\r\n]*"instances"[ \t\r\n]*:')
_NUMBER_AND_SPACE = b"0123456789.eE+- \t\r\n"


def _fast_instances(raw: bytes) -> np.ndarray | None:
    """The ``"instances"`` of a body that is exactly ``{"instances": ARRAY}``, ARRAY a non-empty rectangular nested
    array of JSON numbers, as a float64 array of its shape (what ``np.asarray`` makes of the parsed lists, with the
    same correctly rounded doubles); None for any other body (then parsed the plain way, which also words its
    errors). Rectangular is checked on the text: without its numbers and spaces the value must be exactly the
    brackets and commas of an array of its shape."""
    if not _SIMDJSON:
        try:
            import simdjson
        except ImportError:
            simdjson = None
        _SIMDJSON.append(simdjson)
    simdjson = _SIMDJSON[0]
    if simdjson is None or not isinstance(raw, bytes):
        return None
    start = _PREFIX.match(raw)
    body = raw.rstrip(b" \t\r\n")
    if start is None or not body.endswith(b"}"):
        return None
    parser = getattr(_PARSERS, "parser", None)
    if parser is None:
        parser = _PARSERS.parser = simdjson.Parser()
    shape: list[int] = []
    doc = array = node = None
    try:
        doc = parser.parse(body)
        array = doc["instances"]
        node = array
        while isinstance(node, simdjson.Array):
            shape.append(len(node))
            if not len(node):
                break
            node = node[0]
        values = np.frombuffer(array.as_buffer(of_type="d"), dtype=np.float64) if shape and shape[0] else None
    except (ValueError, TypeError, KeyError, RuntimeError):  # not numbers, not valid JSON, a big integer, ...
        return None
    finally:
        del doc, array, node  # the parser is reused: no proxy of this document may outlive the call
    if values is None or values.size != math.prod(shape):
        return None
    if body[start.end() : -1].translate(None, _NUMBER_AND_SPACE) != _brackets(tuple(shape)):
        return None  # ragged, or more in the body than the one array
    return values.reshape(shape)


@functools.lru_cache(maxsize=64)
def _brackets(shape: tuple[int, ...]) -> bytes:
    """The brackets and commas of a JSON array of ``shape`` (its numbers left out): ``(2, 2)`` is ``[[,],[,]]``."""
    inner = _brackets(shape[1:]) if len(shape) > 1 else b""
    return b"[" + b",".join([inner] * shape[0]) + b"]"


@dataclass(frozen=True)
class TensorSpec:
    """A model input or output as clients see it: ``key`` (the name in requests and responses), ``tensor_name``
    (the graph's ``node:0``), ``shape`` (-1 for unknown dims, None for an unknown rank) and ndflow ``dtype``."""

    key: str
    tensor_name: str
    shape: tuple[int, ...] | None
    dtype: str

    def shape_text(self) -> str:
        return "of unknown rank" if self.shape is None else f"{list(self.shape)}"


@dataclass(frozen=True)
class Signature:
    """The model's ``serving_default`` signature: its inputs and outputs in the model's order."""

    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]

    def input_keys(self) -> list[str]:
        return [s.key for s in self.inputs]

    def listed_inputs(self) -> str:
        return ", ".join(f"'{s.key}' {s.shape_text()} {s.dtype}" for s in self.inputs)


@dataclass
class Decoded:
    """A decoded predict request: ``feeds`` by input key, whether it was ``columnar``, and ``rows``, the batch
    size that every input shares (None when they do not share one, or an input is a scalar)."""

    feeds: dict[str, np.ndarray]
    columnar: bool
    rows: int | None


def _is_b64(value: Any) -> bool:
    return isinstance(value, dict) and len(value) == 1 and "b64" in value


def _strings(value: Any, where: str) -> Any:
    """Nested lists of str. ``{"b64": ...}`` is decoded byte for byte (latin-1: byte ``b`` is the character
    ``chr(b)``), since ndflow's string tensors hold text: any bytes survive, and a ``_bytes`` output gives them
    back as they came."""
    if isinstance(value, list):
        return [_strings(v, where) for v in value]
    if _is_b64(value):
        text = value["b64"]
        if not isinstance(text, str):
            raise invalid(f"{where}: a b64 value must be a base64 string, got {type(text).__name__}")
        try:
            raw = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            raise invalid(f"{where}: the b64 value is not valid base64") from None
        return raw.decode("latin-1")
    if isinstance(value, str):
        return value
    raise invalid(f'{where}: expected text or {{"b64": ...}} for a string input, got a JSON {_json_kind(value)}')


def _flatten(value: Any) -> list[Any]:
    if not isinstance(value, list):
        return [value]
    return [x for v in value for x in _flatten(v)]


def _nested_shape(value: Any, where: str) -> tuple[int, ...]:
    if not isinstance(value, list):
        return ()
    if not value:
        return (0,)
    inner = {_nested_shape(v, where) for v in value}
    if len(inner) > 1:
        raise invalid(f"{where}: ragged nested lists (lists at one depth differ in length)")
    return (len(value), *inner.pop())


def to_array(value: Any, spec: TensorSpec, where: str) -> np.ndarray:
    """``value`` (nested JSON lists) as a numpy array of ``spec``'s dtype; a 400 naming ``where`` if it is not."""
    if spec.dtype == "string":
        text = _strings(value, where)
        shape = _nested_shape(text, where)
        out = np.empty(shape, dtype=object)
        if not shape:
            out[()] = text
        elif out.size:
            out.reshape(-1)[:] = _flatten(text)
        return out
    if _contains_b64(value):
        raise invalid(f"{where}: b64 values are for string inputs; this input is {spec.dtype}")
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError):
        raise invalid(f"{where}: ragged nested lists (lists at one depth differ in length)") from None
    kind = arr.dtype.kind
    if kind in "OUS":
        got = "text" if kind in "US" else "objects or numbers too large"
        raise invalid(f"{where}: expected {_what(spec.dtype)}, got {got}")
    if spec.dtype == "bool":
        if kind != "b" and arr.size:
            raise invalid(f"{where}: expected true/false for a bool input, got numbers")
        return arr.astype(np.bool_)
    if kind == "b" and arr.size:
        raise invalid(f"{where}: expected {_what(spec.dtype)}, got true/false")
    if spec.dtype == "int32":
        if kind == "f":
            if not np.all(np.isfinite(arr)) or not np.all(arr == np.floor(arr)):
                raise invalid(f"{where}: expected integers for an int32 input, got fractions or non-finite numbers")
        if arr.size and (arr.min() < _INT32.min or arr.max() > _INT32.max):
            raise invalid(f"{where}: a value is outside the int32 range")
        return arr.astype(np.int32)
    if spec.dtype in _NUMPY:
        return arr.astype(_NUMPY[spec.dtype])
    raise invalid(f"{where}: inputs of dtype {spec.dtype} are not supported")


def _what(dtype: str) -> str:
    return {"float32": "numbers", "int32": "integers", "bool": "true/false"}.get(dtype, dtype)


def _contains_b64(value: Any) -> bool:
    if isinstance(value, dict):
        return True
    if isinstance(value, list) and value:
        first = value[0]
        return isinstance(first, dict | list) and _contains_b64(first)
    return False


def check_shape(shape: Sequence[int], want: Sequence[int] | None, where: str, what: str = "shape") -> None:
    """A 400 naming ``where`` unless ``shape`` fits ``want`` (-1: any size; None: any shape)."""
    if want is None:
        return
    ok = len(shape) == len(want) and all(w < 0 or w == s for s, w in zip(shape, want, strict=True))
    if not ok:
        raise invalid(f"{where}: expected {what} {list(want)} (-1: any size), got {list(shape)}")


def decode(body: Any, signature: Signature) -> Decoded:
    """A predict request body as arrays fed to the model, checked against ``signature``."""
    if not isinstance(body, dict):
        raise invalid(f"the request body must be a JSON object, got a JSON {_json_kind(body)}")
    name = body.get("signature_name", SIGNATURE_NAME)
    if name not in (SIGNATURE_NAME, ""):
        raise invalid(f'Serving signature name: "{name}" not found in signature def (it has: {SIGNATURE_NAME})')
    unknown = sorted(set(body) - {"instances", "inputs", "signature_name"})
    if unknown:
        raise invalid(f'unknown key(s) {unknown} in the request; a predict request has "instances" or "inputs"')
    if ("instances" in body) == ("inputs" in body):
        raise invalid("a predict request must have exactly one of \"instances\" (row format) and \"inputs\" "
                      "(columnar format)")  # fmt: skip
    if "instances" in body:
        return _decode_rows(body["instances"], signature)
    return _decode_columns(body["inputs"], signature)


def _json_kind(value: Any) -> str:
    kinds = {list: "array", dict: "object", str: "string", bool: "boolean", type(None): "null"}
    return kinds.get(type(value), "number")


def _decode_rows(instances: Any, signature: Signature) -> Decoded:
    if isinstance(instances, np.ndarray):  # numbers read straight into an array (loads' fast path)
        if len(signature.inputs) == 1 and signature.inputs[0].dtype in ("float32", "int32"):
            spec = signature.inputs[0]
            arr = to_array(instances, spec, f"\"instances\" of input '{spec.key}'")
            _check_rows(arr, spec, len(instances))
            return Decoded({spec.key: arr}, False, len(instances))
        instances = instances.tolist()  # other models: as the lists the plain parser makes (the same values)
    if not isinstance(instances, list) or not instances:
        raise invalid('"instances" must be a non-empty list, one entry per instance')
    named = [isinstance(i, dict) and not _is_b64(i) for i in instances]
    keys = signature.input_keys()
    if not any(named):
        if len(signature.inputs) != 1:
            raise invalid(f"the model has {len(keys)} inputs ({signature.listed_inputs()}): each instance must be "
                          "an object naming them")  # fmt: skip
        spec = signature.inputs[0]
        arr = to_array(instances, spec, f"\"instances\" of input '{spec.key}'")
        _check_rows(arr, spec, len(instances))
        return Decoded({spec.key: arr}, False, len(instances))
    if not all(named):
        raise invalid('"instances" mixes objects and plain values: use objects naming the inputs in every instance')
    for n, instance in enumerate(instances):
        missing = [k for k in keys if k not in instance]
        extra = sorted(set(instance) - set(keys))
        if extra:
            raise invalid(f"instance {n}: unknown input(s) {extra}; the model's inputs: {signature.listed_inputs()}")
        if missing:
            raise invalid(f"instance {n}: missing input(s) {missing}; the model's inputs: {signature.listed_inputs()}")
    feeds = {}
    for spec in signature.inputs:
        rows = [to_array(inst[spec.key], spec, f"instance {n}, input '{spec.key}'") for n, inst in enumerate(instances)]
        first = rows[0].shape
        for n, row in enumerate(rows):
            if row.shape != first:
                raise invalid(f"input '{spec.key}': instances are ragged (instance 0 has shape {list(first)}, "
                              f"instance {n} has {list(row.shape)}); every instance needs the same shape")  # fmt: skip
        arr = np.stack(rows) if rows else np.zeros((0,))
        _check_rows(arr, spec, len(instances))
        feeds[spec.key] = arr
    return Decoded(feeds, False, len(instances))


def _check_rows(arr: np.ndarray, spec: TensorSpec, count: int) -> None:
    if spec.shape is None:
        return
    if not spec.shape:
        raise invalid(f"input '{spec.key}' is a scalar: send it in the columnar format (\"inputs\")")
    check_shape(arr.shape[1:], spec.shape[1:], f"input '{spec.key}'", "each instance to have shape")
    if spec.shape[0] >= 0 and spec.shape[0] != count:
        raise invalid(f"input '{spec.key}' takes a batch of exactly {spec.shape[0]}, got {count} instance(s)")


def _decode_columns(inputs: Any, signature: Signature) -> Decoded:
    keys = signature.input_keys()
    if isinstance(inputs, dict) and not _is_b64(inputs):
        extra = sorted(set(inputs) - set(keys))
        if extra:
            raise invalid(f"unknown input(s) {extra}; the model's inputs: {signature.listed_inputs()}")
        missing = [k for k in keys if k not in inputs]
        if missing:
            raise invalid(f"missing input(s) {missing}; the model's inputs: {signature.listed_inputs()}")
        given = inputs
    elif len(keys) == 1:
        given = {keys[0]: inputs}
    else:
        raise invalid(f"the model has {len(keys)} inputs ({signature.listed_inputs()}): \"inputs\" must be an "
                      "object naming them")  # fmt: skip
    feeds = {}
    for spec in signature.inputs:
        arr = to_array(given[spec.key], spec, f"input '{spec.key}'")
        check_shape(arr.shape, spec.shape, f"input '{spec.key}'")
        feeds[spec.key] = arr
    dims = {a.shape[0] if a.ndim else None for a in feeds.values()}
    rows = dims.pop() if len(dims) == 1 else None
    return Decoded(feeds, True, rows)


# -- responses -------------------------------------------------------------------------------------------------
def _jsonable(arr: np.ndarray, key: str) -> Any:
    if arr.dtype == object or arr.dtype.kind in "US":
        if key.endswith("_bytes"):
            encode = np.frompyfunc(lambda s: {"b64": base64.b64encode(_raw(s)).decode("ascii")}, 1, 1)
            return encode(arr).tolist() if arr.ndim else encode(arr)
        as_text = np.frompyfunc(lambda s: s.decode("utf-8", "replace") if isinstance(s, bytes) else str(s), 1, 1)
        out = as_text(arr)
        return out.tolist() if isinstance(out, np.ndarray) else out
    if arr.dtype.kind == "c":
        return np.stack([arr.real, arr.imag], axis=-1).tolist()
    return arr.tolist()


def _raw(s: Any) -> bytes:
    """The bytes of a ``_bytes`` output's string: byte for byte (as b64 inputs are read), UTF-8 for text with
    characters beyond U+00FF."""
    if isinstance(s, bytes):
        return s
    text = str(s)
    try:
        return text.encode("latin-1")
    except UnicodeEncodeError:
        return text.encode("utf-8")


def encode(outputs: Mapping[str, np.ndarray], columnar: bool, rows: int | None) -> dict[str, Any]:
    """The response body of a predict request: ``{"outputs": ...}`` (columnar) or ``{"predictions": ...}``."""
    if columnar:
        if len(outputs) == 1:
            ((key, arr),) = outputs.items()
            return {"outputs": _jsonable(arr, key)}
        return {"outputs": {k: _jsonable(a, k) for k, a in outputs.items()}}
    if len(outputs) == 1:
        ((key, arr),) = outputs.items()
        return {"predictions": _jsonable(arr, key)}
    for key, arr in outputs.items():
        if arr.ndim == 0 or arr.shape[0] != rows:
            raise invalid(f"output '{key}' has shape {list(arr.shape)}: the row format (\"instances\") needs every "
                          f"output's first dimension to be the number of instances ({rows}); send the request in "
                          "the columnar format (\"inputs\") instead")  # fmt: skip
    lists = {k: _jsonable(a, k) for k, a in outputs.items()}
    return {"predictions": [{k: lists[k][i] for k in lists} for i in range(rows or 0)]}


def _tensor_info(spec: TensorSpec) -> dict[str, Any]:
    if spec.shape is None:
        shape: dict[str, Any] = {"dim": [], "unknown_rank": True}
    else:
        shape = {"dim": [{"size": str(d), "name": ""} for d in spec.shape], "unknown_rank": False}
    return {"dtype": DT_NAMES.get(spec.dtype, "DT_INVALID"), "tensor_shape": shape, "name": spec.tensor_name}


def signature_def(signature: Signature) -> dict[str, Any]:
    """The metadata's ``signature_def`` map (one signature, ``serving_default``)."""
    return {
        "signature_def": {
            SIGNATURE_NAME: {
                "inputs": {s.key: _tensor_info(s) for s in signature.inputs},
                "outputs": {s.key: _tensor_info(s) for s in signature.outputs},
                "method_name": "tensorflow/serving/predict",
            }
        }
    }
