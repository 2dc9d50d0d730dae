"""Einsum's equation as the array libraries take it: letters for TF.js's labels, and the result dtype."""

from __future__ import annotations

import string

from ...core.dtypes import upcast_type


def einsum_spec(equation: str, dtypes: list[str]) -> tuple[str, str]:
    """``(spec, dtype)``: ``equation`` with its labels as letters (numpy and torch want letters; TF.js takes any
    character), and the dtype of the result (the inputs' upcast; bool products summed are int32, as in TF.js)."""
    inputs_part, output = equation.split("->")
    terms = inputs_part.split(",")
    dtype = dtypes[0]
    for d in dtypes[1:]:
        dtype = upcast_type(dtype, d)
    summed = set("".join(terms)) - set(output)
    if summed and dtype == "bool":  # TF.js sums bool products as int32
        dtype = "int32"
    letters = dict(zip(dict.fromkeys(inputs_part.replace(",", "")), string.ascii_letters, strict=False))
    spec = ",".join("".join(letters[c] for c in term) for term in terms)
    spec += "->" + "".join(letters[c] for c in output)
    return spec, dtype
