"""String kernels: StringSplit, StringToHashBucketFast, StaticRegexReplace, StringNGrams.

String tensors hold Python ``str`` in numpy object arrays. Work on each string is Python string
work (split, hash, regex, join): these kernels loop over the strings, and build every numeric
output (indices, splits) with whole-array numpy operations.
"""

from __future__ import annotations

import re
from functools import lru_cache

import numpy as np

from ....core import kernel_names as kn
from ..backend import CPUBackend
from .common import Output, cpu_kernel, out, values_of


def _strings(items: list[str]) -> np.ndarray:
    """A 1-D object array of Python strings."""
    array = np.empty(len(items), object)
    array[:] = items
    return array


# ----------------------------------------------------------------------------- StringSplit


def _split(text: str, delimiter: str, skip_empty: bool) -> list[str]:
    """TF.js's split: an empty string gives no tokens; an empty delimiter splits into characters;
    a longer delimiter is a set of single-character delimiters."""
    if not text:
        return []
    if not delimiter:
        return list(text)
    if len(delimiter) == 1:
        tokens = text.split(delimiter)
    else:
        tokens = re.split("[" + re.escape(delimiter) + "]", text)
    return [t for t in tokens if t] if skip_empty else tokens


@cpu_kernel(kn.StringSplit)
def string_split(backend: CPUBackend, inputs: tuple, attrs: dict) -> list[Output]:
    """Split each string of a vector; a sparse result: indices [n, 2], values [n], dense shape [2]."""
    input_t, delimiter_t = inputs
    texts = values_of(backend, input_t)
    delimiter = values_of(backend, delimiter_t).reshape(())[()]
    skip_empty = bool(attrs["skip_empty"])
    pieces = [_split(text, delimiter, skip_empty) for text in texts]
    counts = np.fromiter((len(p) for p in pieces), np.int64, len(pieces))
    total = int(counts.sum())
    rows = np.repeat(np.arange(len(pieces)), counts)
    columns = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
    values = _strings([token for p in pieces for token in p])
    width = int(counts.max()) if counts.size else 0
    return [
        out(backend, np.stack([rows, columns], axis=1).astype(np.int32), "int32"),
        out(backend, values, "string"),
        out(backend, np.array([len(pieces), width], np.int32), "int32"),
    ]


# ----------------------------------------------------------------------------- Fingerprint64

_M64 = (1 << 64) - 1
_K0, _K1, _K2 = 0xC3A5C85C97CB3127, 0xB492B66FBE98F273, 0x9AE16A3B2F90404F
_KMUL = 0x9DDFEA08EB382D69


def _u64(s: bytes, i: int) -> int:
    return int.from_bytes(s[i : i + 8], "little")


def _u32(s: bytes, i: int) -> int:
    return int.from_bytes(s[i : i + 4], "little")


def _rot(v: int, r: int) -> int:
    return v if r == 0 else ((v >> r) | (v << (64 - r))) & _M64


def _shift_mix(v: int) -> int:
    return v ^ (v >> 47)


def _hash16(u: int, v: int, mul: int = _KMUL) -> int:
    a = _shift_mix(((u ^ v) * mul) & _M64)
    b = _shift_mix(((v ^ a) * mul) & _M64)
    return (b * mul) & _M64


def _weak32(s: bytes, i: int, a: int, b: int) -> tuple[int, int]:
    w, x, y, z = _u64(s, i), _u64(s, i + 8), _u64(s, i + 16), _u64(s, i + 24)
    a = (a + w) & _M64
    b = _rot((b + a + z) & _M64, 21)
    c = a
    a = (a + x + y) & _M64
    b = (b + _rot(a, 44)) & _M64
    return (a + z) & _M64, (b + c) & _M64


def _hash0to16(s: bytes, n: int) -> int:
    if n >= 8:
        mul = _K2 + n * 2
        a = (_u64(s, 0) + _K2) & _M64
        b = _u64(s, n - 8)
        c = (_rot(b, 37) * mul + a) & _M64
        d = ((_rot(a, 25) + b) * mul) & _M64
        return _hash16(c, d, mul)
    if n >= 4:
        return _hash16(((_u32(s, 0) << 3) + n) & _M64, _u32(s, n - 4), _K2 + n * 2)
    if n > 0:
        y = s[0] + (s[n >> 1] << 8)
        z = n + (s[n - 1] << 2)
        return (_shift_mix(((_K2 * y) ^ (_K0 * z)) & _M64) * _K2) & _M64
    return _K2


def _hash17to32(s: bytes, n: int) -> int:
    mul = _K2 + n * 2
    a = (_u64(s, 0) * _K1) & _M64
    b = _u64(s, 8)
    c = (_u64(s, n - 8) * mul) & _M64
    d = (_u64(s, n - 16) * _K2) & _M64
    return _hash16(
        (_rot((a + b) & _M64, 43) + _rot(c, 30) + d) & _M64, (a + _rot((b + _K2) & _M64, 18) + c) & _M64, mul
    )


def _hash33to64(s: bytes, n: int) -> int:
    mul = _K2 + n * 2
    a = (_u64(s, 0) * _K2) & _M64
    b = _u64(s, 8)
    c = (_u64(s, n - 8) * mul) & _M64
    d = (_u64(s, n - 16) * _K2) & _M64
    y = (_rot((a + b) & _M64, 43) + _rot(c, 30) + d) & _M64
    z = _hash16(y, (a + _rot((b + _K2) & _M64, 18) + c) & _M64, mul)
    e = (_u64(s, 16) * mul) & _M64
    f = _u64(s, 24)
    g = ((y + _u64(s, n - 32)) * mul) & _M64
    h = ((z + _u64(s, n - 24)) * mul) & _M64
    return _hash16((_rot((e + f) & _M64, 43) + _rot(g, 30) + h) & _M64, (e + _rot((f + a) & _M64, 18) + g) & _M64, mul)


@lru_cache(maxsize=65536)
def fingerprint64(s: bytes) -> int:
    """Farmhash Fingerprint64 of ``s`` (TensorFlow's string hash), as an unsigned 64-bit int."""
    n = len(s)
    if n <= 16:
        return _hash0to16(s, n)
    if n <= 32:
        return _hash17to32(s, n)
    if n <= 64:
        return _hash33to64(s, n)
    # Longer strings: 64-byte blocks through a 56-byte state (v, w, x, y, z).
    x, y = 81, (81 * _K1 + 113) & _M64
    z = (_shift_mix((y * _K2 + 113) & _M64) * _K2) & _M64
    v0 = v1 = w0 = w1 = 0
    x = (x * _K2 + _u64(s, 0)) & _M64
    end = ((n - 1) >> 6) * 64
    offset = 0
    while True:
        x = (_rot((x + y + v0 + _u64(s, offset + 8)) & _M64, 37) * _K1) & _M64
        y = (_rot((y + v1 + _u64(s, offset + 48)) & _M64, 42) * _K1) & _M64
        x ^= w1
        y = (y + v0 + _u64(s, offset + 40)) & _M64
        z = (_rot((z + w0) & _M64, 33) * _K1) & _M64
        v0, v1 = _weak32(s, offset, (v1 * _K1) & _M64, (x + w0) & _M64)
        w0, w1 = _weak32(s, offset + 32, (z + w1) & _M64, (y + _u64(s, offset + 16)) & _M64)
        z, x = x, z
        offset += 64
        if offset == end:
            break
    mul = _K1 + ((z & 0xFF) << 1)
    offset = end + ((n - 1) & 63) - 63  # the last 64 bytes
    w0 = (w0 + ((n - 1) & 63)) & _M64
    v0 = (v0 + w0) & _M64
    w0 = (w0 + v0) & _M64
    x = (_rot((x + y + v0 + _u64(s, offset + 8)) & _M64, 37) * mul) & _M64
    y = (_rot((y + v1 + _u64(s, offset + 48)) & _M64, 42) * mul) & _M64
    x ^= (w1 * 9) & _M64
    y = (y + v0 * 9 + _u64(s, offset + 40)) & _M64
    z = (_rot((z + w0) & _M64, 33) * mul) & _M64
    v0, v1 = _weak32(s, offset, (v1 * mul) & _M64, (x + w0) & _M64)
    w0, w1 = _weak32(s, offset + 32, (z + w1) & _M64, (y + _u64(s, offset + 16)) & _M64)
    z, x = x, z
    return _hash16(
        (_hash16(v0, w0, mul) + (_shift_mix(y) * _K0 & _M64) + z) & _M64, (_hash16(v1, w1, mul) + x) & _M64, mul
    )


@cpu_kernel(kn.StringToHashBucketFast)
def string_to_hash_bucket_fast(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    """Fingerprint64 of each string's UTF-8 bytes, modulo ``num_buckets`` (int32, same shape)."""
    (x,) = inputs
    num_buckets = int(attrs["num_buckets"])
    texts = values_of(backend, x).reshape(-1)
    buckets = np.fromiter((fingerprint64(t.encode("utf-8")) % num_buckets for t in texts), np.int64, texts.size)
    return out(backend, buckets.reshape(x.shape).astype(np.int32), "int32")


# ----------------------------------------------------------------------------- StaticRegexReplace

_JS_CLASS_ESCAPES = {"d": "0-9", "w": "A-Za-z0-9_"}  # JavaScript's \d and \w are ASCII-only


def js_pattern(pattern: str) -> str:
    """A JavaScript RegExp pattern in Python ``re`` syntax (named groups, ``\\k<name>``, ``$``,
    ASCII ``\\d``/``\\w``, ``[^]``)."""
    parts: list[str] = []
    i, n, in_class = 0, len(pattern), False
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            e = pattern[i + 1]
            if e in _JS_CLASS_ESCAPES:
                parts.append(_JS_CLASS_ESCAPES[e] if in_class else f"[{_JS_CLASS_ESCAPES[e]}]")
            elif e in "DW" and not in_class:
                parts.append(f"[^{_JS_CLASS_ESCAPES[e.lower()]}]")
            elif e == "k" and not in_class and pattern.startswith("<", i + 2) and ">" in pattern[i + 3 :]:
                close = pattern.index(">", i + 3)
                parts.append(f"(?P={pattern[i + 3 : close]})")
                i = close + 1
                continue
            else:
                parts.append(c + e)
            i += 2
            continue
        if in_class:
            in_class = c != "]"
            parts.append(c)
        elif c == "[":
            if pattern.startswith("[^]", i):
                parts.append(r"[\s\S]")
                i += 3
                continue
            if pattern.startswith("[]", i):
                parts.append("(?!)")
                i += 2
                continue
            in_class = True
            parts.append(c)
            if pattern.startswith("^", i + 1):  # keep "[^" together so "]" right after it is literal
                parts.append("^")
                i += 1
        elif c == "$":
            parts.append(r"\Z")
        elif c == "(" and pattern.startswith("(?<", i) and not pattern.startswith(("(?<=", "(?<!"), i):
            parts.append("(?P<")
            i += 3
            continue
        else:
            parts.append(c)
        i += 1
    return "".join(parts)


def js_rewrite(rewrite: str, groups: int, names: set[str]) -> list[tuple[str, object]]:
    """Parse a JavaScript replacement string (``$&``, ``$1``..``$99``, ``$<name>``, ``$$``, ``$```, ``$'``)."""
    parts: list[tuple[str, object]] = []
    literal: list[str] = []
    i, n = 0, len(rewrite)

    def token(kind: str, value: object = None) -> None:
        if literal:
            parts.append(("text", "".join(literal)))
            literal.clear()
        parts.append((kind, value))

    while i < n:
        c = rewrite[i]
        nxt = rewrite[i + 1] if i + 1 < n else ""
        if c != "$" or not nxt:
            literal.append(c)
            i += 1
        elif nxt == "$":
            literal.append("$")
            i += 2
        elif nxt == "&":
            token("group", 0)
            i += 2
        elif nxt == "`":
            token("before")
            i += 2
        elif nxt == "'":
            token("after")
            i += 2
        elif nxt.isdigit():
            two = rewrite[i + 1 : i + 3]
            if len(two) == 2 and two.isdigit() and 1 <= int(two) <= groups:
                token("group", int(two))
                i += 3
            elif 1 <= int(nxt) <= groups:
                token("group", int(nxt))
                i += 2
            else:
                literal.append(c)
                i += 1
        elif nxt == "<" and names and ">" in rewrite[i + 2 :]:
            close = rewrite.index(">", i + 2)
            name = rewrite[i + 2 : close]
            if name in names:
                token("group", name)
            i = close + 1
        else:
            literal.append(c)
            i += 1
    if literal:
        parts.append(("text", "".join(literal)))
    return parts


@lru_cache(maxsize=256)
def compile_replacement(pattern: str, rewrite: str):  # noqa: ANN201 - (compiled regex, function)
    """The compiled pattern and a ``re.sub`` replacement function with JavaScript semantics."""
    try:
        regex = re.compile(js_pattern(pattern))
    except re.error as exc:
        raise ValueError(f"static_regex_replace: invalid regular expression {pattern!r}: {exc}") from None
    parts = js_rewrite(rewrite, regex.groups, set(regex.groupindex))

    def replace(m: re.Match) -> str:
        pieces = []
        for kind, value in parts:
            if kind == "text":
                pieces.append(value)
            elif kind == "group":
                pieces.append(m.group(value) or "")
            elif kind == "before":
                pieces.append(m.string[: m.start()])
            else:
                pieces.append(m.string[m.end() :])
        return "".join(pieces)

    return regex, replace


@cpu_kernel(kn.StaticRegexReplace)
def static_regex_replace(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    """Replace matches of ``pattern`` with ``rewrite`` in every string (all matches, or the first)."""
    (x,) = inputs
    regex, replace = compile_replacement(attrs["pattern"], attrs["rewrite"])
    count = 0 if attrs["replace_global"] else 1
    texts = values_of(backend, x).reshape(-1)
    result = _strings([regex.sub(replace, t, count=count) for t in texts])
    return out(backend, result.reshape(x.shape), "string")


# ----------------------------------------------------------------------------- StringNGrams


def _check_splits(splits: np.ndarray, size: int) -> None:
    op = "string_n_grams"
    if splits.size == 0:
        return
    if splits[0] != 0:
        raise ValueError(f"{op}: the first value of 'data_splits' must be 0, got {int(splits[0])}")
    bad = (np.diff(splits) < 0) | (splits[1:] > size)
    if bad.any():
        i = int(np.flatnonzero(bad)[0]) + 1
        raise ValueError(
            f"{op}: data_splits[{i}] = {int(splits[i])} must be in [{int(splits[i - 1])}, {size}] (splits are sorted)"
        )
    if splits[-1] != size:
        raise ValueError(f"{op}: the last value of 'data_splits' must be the data size {size}, got {int(splits[-1])}")


@cpu_kernel(kn.StringNGrams)
def string_n_grams(backend: CPUBackend, inputs: tuple, attrs: dict) -> list[Output]:
    """N-grams of each row of a ragged string tensor (``data`` cut by ``data_splits``), padded."""
    data_t, splits_t = inputs
    data = values_of(backend, data_t)
    splits = values_of(backend, splits_t).reshape(-1).astype(np.int64)
    _check_splits(splits, data.size)
    if data.size == 0 or splits.size == 0:  # as TF.js: no data or no rows, no n-grams
        return [out(backend, _strings([]), "string"), out(backend, np.zeros(splits_t.shape, np.int32), "int32")]
    sep, widths = attrs["separator"], attrs["n_gram_widths"]
    left, right, pad_width = attrs["left_pad"], attrs["right_pad"], attrs["pad_width"]
    preserve = attrs["preserve_short_sequences"]
    grams: list[str] = []
    counts = np.zeros(max(splits.size - 1, 0), np.int64)
    for row in range(splits.size - 1):  # rows of a ragged tensor: each makes its own strings
        tokens = list(data[splits[row] : splits[row + 1]])
        start = len(grams)
        for width in widths:
            pad = min(width - 1 if pad_width < 0 else pad_width, width - 1)
            padded = [left] * pad + tokens + [right] * pad
            grams.extend(sep.join(padded[k : k + width]) for k in range(len(padded) - width + 1))
        if preserve and tokens and len(grams) == start:
            pad = max(pad_width, 0)
            grams.append(sep.join([left] * pad + tokens + [right] * pad))
        counts[row] = len(grams) - start
    values = _strings(grams)
    out_splits = np.zeros(splits.size, np.int32)
    out_splits[1:] = np.cumsum(counts)
    return [out(backend, values, "string"), out(backend, out_splits.reshape(splits_t.shape), "int32")]
