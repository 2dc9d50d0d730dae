"""``nf.string``: ops on string tensors, as ``tf.string``.

String tensors hold Python ``str``; TF.js holds UTF-8 bytes. Hashing uses the UTF-8 bytes, as
TF.js does; splitting with an empty delimiter splits into characters (TF.js: into bytes).
Regular expressions use JavaScript RegExp syntax, as in TF.js (translated to Python's ``re``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from ..core import kernel_names as kn
from ..core.engine import ENGINE
from ..core.tensor import Tensor
from ..core.types import TensorLike
from .sparse_dense import _Args

_INT32_MAX = 2**31 - 1


class StringSplitResult(NamedTuple):
    indices: Tensor
    values: Tensor
    shape: Tensor


class StringNGramsResult(NamedTuple):
    n_grams: Tensor
    n_grams_splits: Tensor


def _check_str(op: str, arg: str, value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{op}: argument '{arg}' must be a str, got {type(value).__name__}")
    return value


def _check_int(op: str, arg: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{op}: argument '{arg}' must be an int, got {type(value).__name__}")
    return int(value)


def string_split(input: TensorLike, delimiter: TensorLike, skip_empty: bool = True) -> StringSplitResult:  # noqa: A002
    """Split each string of a vector at any character of ``delimiter`` (into characters when it is
    empty); returns the sparse result ``(indices, values, shape)``."""
    op = "string_split"
    with _Args(op) as arg:
        x = arg(input, "input", "string")
        delim = arg(delimiter, "delimiter", "string")
        if x.rank != 1:
            raise ValueError(f"{op}: argument 'input' must be a vector (rank 1), got shape {list(x.shape)}")
        if delim.rank != 0:
            raise ValueError(f"{op}: argument 'delimiter' must be a scalar, got shape {list(delim.shape)}")
        outputs = ENGINE.run_kernel(kn.StringSplit, (x, delim), {"skip_empty": bool(skip_empty)})
        return StringSplitResult(*outputs)


def string_to_hash_bucket_fast(input: TensorLike, num_buckets: int) -> Tensor:  # noqa: A002
    """Each string hashed (Farmhash Fingerprint64 of its UTF-8 bytes, as TensorFlow) into
    ``num_buckets`` buckets: int32 in [0, num_buckets)."""
    op = "string_to_hash_bucket_fast"
    _check_int(op, "num_buckets", num_buckets)
    if not 1 <= num_buckets <= _INT32_MAX:
        raise ValueError(f"{op}: argument 'num_buckets' must be in [1, {_INT32_MAX}], got {num_buckets}")
    with _Args(op) as arg:
        x = arg(input, "input", "string")
        return ENGINE.run_kernel(kn.StringToHashBucketFast, (x,), {"num_buckets": int(num_buckets)})


def static_regex_replace(input: TensorLike, pattern: str, rewrite: str, replace_global: bool = True) -> Tensor:  # noqa: A002
    """Replace the matches of ``pattern`` (JavaScript RegExp syntax) with ``rewrite`` (``$1``,
    ``$&``... as in JavaScript) in each string: every match, or only the first."""
    op = "static_regex_replace"
    _check_str(op, "pattern", pattern)
    _check_str(op, "rewrite", rewrite)
    with _Args(op) as arg:
        x = arg(input, "input", "string")
        attrs = {"pattern": pattern, "rewrite": rewrite, "replace_global": bool(replace_global)}
        return ENGINE.run_kernel(kn.StaticRegexReplace, (x,), attrs)


def string_n_grams(
    data: TensorLike,
    data_splits: TensorLike,
    separator: str,
    n_gram_widths: Sequence[int],
    left_pad: str,
    right_pad: str,
    pad_width: int,
    preserve_short_sequences: bool,
) -> StringNGramsResult:
    """N-grams of each row of a ragged string tensor (``data`` cut at ``data_splits``), joined by
    ``separator`` and padded with ``pad_width`` pads (-1: ``width - 1``) on each side; returns
    ``(n_grams, n_grams_splits)``."""
    op = "string_n_grams"
    for name, value in (("separator", separator), ("left_pad", left_pad), ("right_pad", right_pad)):
        _check_str(op, name, value)
    _check_int(op, "pad_width", pad_width)
    if isinstance(n_gram_widths, int | str) or not isinstance(n_gram_widths, Sequence) or not n_gram_widths:
        raise ValueError(f"{op}: argument 'n_gram_widths' must be a non-empty list of ints, got {n_gram_widths!r}")
    widths = [_check_int(op, "n_gram_widths", w) for w in n_gram_widths]
    if min(widths) < 1:
        raise ValueError(f"{op}: argument 'n_gram_widths' must hold positive ints, got {widths}")
    with _Args(op) as arg:
        x = arg(data, "data", "string")
        splits = arg(data_splits, "data_splits", "int32")
        if x.rank != 1:
            raise ValueError(f"{op}: argument 'data' must be a vector (rank 1), got shape {list(x.shape)}")
        attrs = {
            "separator": separator,
            "n_gram_widths": tuple(widths),
            "left_pad": left_pad,
            "right_pad": right_pad,
            "pad_width": int(pad_width),
            "preserve_short_sequences": bool(preserve_short_sequences),
        }
        return StringNGramsResult(*ENGINE.run_kernel(kn.StringNGrams, (x, splits), attrs))


__all__ = ["static_regex_replace", "string_n_grams", "string_split", "string_to_hash_bucket_fast"]
