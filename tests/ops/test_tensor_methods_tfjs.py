"""Tensor methods TF.js chains that ndflow lacked: as1d..as5d, as_scalar, as_type, bytes, where, ones_like,
zeros_like, variable; checked against TF.js 4.22 (tests/fixtures/tfjs_surface.json)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

import ndflow as nf

WANT = json.loads((Path(__file__).parents[1] / "fixtures" / "tfjs_surface.json").read_text())["tensor"]


def _check(t: nf.Tensor, want: dict) -> None:
    assert list(t.shape) == want["shape"] and t.dtype == want["dtype"]
    assert [float(v) for v in t.data_sync().tolist()] == pytest.approx(want["values"])


def test_reshaping_methods() -> None:
    t = nf.tensor([1, 2, 3, 4, 5, 6, 7, 8], dtype="float32")
    cases = {
        "as1D": lambda: t.reshape([2, 4]).as1d(),
        "as2D": lambda: t.as2d(2, 4),
        "as3D": lambda: t.as3d(2, 2, 2),
        "as4D": lambda: t.as4d(1, 2, 2, 2),
        "as5D": lambda: t.as5d(1, 2, 1, 2, 2),
        "asScalar": lambda: nf.tensor([[9.0]]).as_scalar(),
        "asType": lambda: nf.tensor([1.7, -0.2, 0]).as_type("int32"),
        "onesLike": lambda: nf.tensor([[1, 2]], dtype="int32").ones_like(),
        "zerosLike": lambda: nf.tensor([True, False]).zeros_like(),
        "where": lambda: nf.tensor([1.0, 2, 3]).where(nf.tensor([True, False, True]), nf.tensor([7.0, 8, 9])),
    }
    for name, make in cases.items():
        nf.tidy(lambda make=make, name=name: _check(make(), WANT[name]))
    t.dispose()


def test_variable_method() -> None:
    x = nf.tensor([1.0, 2.0])
    v = x.variable(False, "v_surface_method", "float32")
    assert isinstance(v, nf.Variable) and not v.trainable and v.name == "v_surface_method"
    _check(v, WANT["variable"])
    nf.dispose([x, v])


def test_shape_errors() -> None:
    two = nf.tensor([1.0, 2.0])
    with pytest.raises(ValueError, match="as_scalar: the tensor must have exactly 1 element"):
        two.as_scalar()
    eight = nf.tensor([1.0] * 8)
    with pytest.raises(ValueError):
        eight.as2d(3, 3)  # TF.js: "Size(8) must match the product of shape 3,3"
    nf.dispose([two, eight])


@pytest.mark.parametrize("dtype", ["float32", "int32", "bool", "complex64", "string"])
def test_bytes_matches_tfjs(dtype: str) -> None:
    make = {
        "float32": lambda: nf.tensor([1.5, -2, 3e-8]),
        "int32": lambda: nf.tensor([1, -2, 70000], dtype="int32"),
        "bool": lambda: nf.tensor([True, False, True]),
        "complex64": lambda: nf.complex(nf.tensor([1.0, 2]), nf.tensor([3.0, -4])),
        "string": lambda: nf.tensor(["a", "héllo", ""]),
    }[dtype]
    t = nf.tidy(make)
    got = asyncio.run(t.bytes())
    want = WANT["bytes"][dtype]
    if dtype == "string":
        assert got == [bytes(b) for b in want]
    else:
        assert isinstance(got, bytes) and got == bytes(want)
    t.dispose()
