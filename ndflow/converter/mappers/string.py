"""String ops (TF.js converter category ``string``): regex replace, n-grams, split, hashing.

String attributes (``pattern``, ``rewrite``, ``separator``, pads) keep their case; TF.js's
converter lowercases every string attribute, so its patterns only match lowercase text.
"""

from __future__ import annotations

from typing import Any

from ... import ops as nf
from ...core.tensor import Tensor
from ..load.graph import Node
from ._util import attr_num, fail, mapper


def _str(node: Node, name: str, default: str | None = None) -> str:
    """A string attribute (case kept), required unless it has a default."""
    value = node.str(name, default)
    if value is None:
        raise fail(node, f"missing the '{name}' attribute")
    return value


@mapper("StaticRegexReplace")
def static_regex_replace(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Each string with matches of ``pattern`` replaced by ``rewrite`` (all, or the first)."""
    return nf.string.static_regex_replace(
        inputs[0], _str(node, "pattern"), _str(node, "rewrite", ""), bool(node.bool("replace_global", True))
    )


@mapper("StringNGrams")
def string_n_grams(node: Node, inputs: list[Any], ctx: Any) -> list[Tensor]:
    """``[ngrams, ngrams_splits]`` of a ragged string tensor ``(data, data_splits)``."""
    res = nf.string.string_n_grams(
        inputs[0],
        inputs[1],
        _str(node, "separator", " "),
        node.ints("ngram_widths", []) or [],
        _str(node, "left_pad", ""),
        _str(node, "right_pad", ""),
        int(attr_num(node, "pad_width", 0)),
        bool(node.bool("preserve_short_sequences", False)),
    )
    return [res.n_grams, res.n_grams_splits]


@mapper("StringSplit")
def string_split(node: Node, inputs: list[Any], ctx: Any) -> list[Tensor]:
    """``[indices, values, shape]``: a sparse tensor of the pieces of each string."""
    res = nf.string.string_split(inputs[0], inputs[1], bool(node.bool("skip_empty", True)))
    return [res.indices, res.values, res.shape]


@mapper("StringToHashBucketFast")
def string_to_hash_bucket_fast(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Each string hashed (fingerprint64) into ``num_buckets`` buckets."""
    return nf.string.string_to_hash_bucket_fast(inputs[0], int(attr_num(node, "num_buckets", 1)))
