"""``str(t)`` / ``t.to_string(verbose)`` / ``print(t)`` against real TF.js 4.22 ``toString`` output."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import ndflow as nf
from ndflow.core import tensor_format

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

# The tensors of tests/fixtures/gen_tensor_format.js, in its order; the fixture holds
# [toString(), toString(true)] for each, as printed by TF.js 4.22 on the cpu backend.
FIXTURE_TENSORS = [
    ("2x2", lambda: nf.tensor([[1, 2], [3, 4]])),
    ("2x2_padded", lambda: nf.tensor([[1.5, -2], [3, 40.25]])),
    ("float_specials", lambda: nf.tensor([0.1, 1e-8, 1e-7, 123456789, np.nan, np.inf])),
    ("range_30_elided", lambda: nf.range(0, 30)),
    ("zeros_2x3x2", lambda: nf.zeros([2, 3, 2])),
    ("bool", lambda: nf.tensor([True, False], None, "bool")),
    ("scalar_0.1", lambda: nf.scalar(0.1)),
    ("scalar_int32", lambda: nf.scalar(3, "int32")),
    ("zeros_25x2_elided_rows", lambda: nf.zeros([25, 2])),
    ("zeros_0x3", lambda: nf.zeros([0, 3])),
    ("zeros_2x0", lambda: nf.zeros([2, 0])),
    ("string", lambda: nf.tensor(["a", "bc"])),
    ("zeros_rank4", lambda: nf.zeros([2, 2, 2, 2])),
    ("zeros_0", lambda: nf.zeros([0])),
    ("complex", lambda: nf.tensor(np.array([1.5 + 3j, 2 - 4j], np.complex64))),
    ("zeros_3x1x2", lambda: nf.zeros([3, 1, 2])),
]


def _fixture() -> list[list[str]]:
    return json.loads((FIXTURES / "tensor_format.json").read_text())


def test_fixture_matches_the_generator():
    """One recorded pair per tensor of gen_tensor_format.js (guards the order used below)."""
    recorded = _fixture()
    source = (FIXTURES / "gen_tensor_format.js").read_text()
    assert len(recorded) == len(FIXTURE_TENSORS)
    assert all(len(pair) == 2 and pair[0].startswith("Tensor\n") for pair in recorded)
    body = source[source.index("const cases = [") : source.index("];")]
    assert body.index("tf.tensor([[1,2],[3,4]])") < body.index("tf.complex([1.5, 2],[3, -4])")
    assert body.rstrip().endswith("tf.zeros([3, 1, 2]),")


def _printed(make, verbose: bool) -> str:
    return nf.tidy(lambda: make().to_string(verbose))


@pytest.mark.parametrize(
    ("index", "make"), [(i, c[1]) for i, c in enumerate(FIXTURE_TENSORS)], ids=[c[0] for c in FIXTURE_TENSORS]
)
def test_to_string_matches_tfjs(index, make):
    plain, verbose = _fixture()[index]
    assert nf.tidy(lambda: str(make())) == plain
    assert _printed(make, False) == plain
    assert _printed(make, True) == verbose


# More TF.js 4.22 (cpu backend) ``toString()`` outputs, recorded with the oracle's TF.js
# (~/.cache/ndflow-oracle) from the JS expression given with each case.
EXTRA_RECORDED = [
    ("tf.tensor(0..24, [5,5])", lambda: nf.tensor(np.arange(25, dtype=np.float32).reshape(5, 5)),
     "Tensor\n    [[0 , 1 , 2 , 3 , 4 ],\n     [5 , 6 , 7 , 8 , 9 ],\n     [10, 11, 12, 13, 14],\n"
     "     [15, 16, 17, 18, 19],\n     [20, 21, 22, 23, 24]]"),
    ("tf.tensor([[-1.25, 0.5],[100, 2]])", lambda: nf.tensor([[-1.25, 0.5], [100, 2]]),
     "Tensor\n    [[-1.25, 0.5],\n     [100  , 2  ]]"),
    ("tf.scalar(true)", lambda: nf.scalar(True), "Tensor\n    true"),
    ("tf.tensor([[true,false],[false,true]])", lambda: nf.tensor([[True, False], [False, True]]),
     "Tensor\n    [[true , false],\n     [false, true ]]"),
    ("tf.tensor([[1e-3, 12345.678]])", lambda: nf.tensor([[1e-3, 12345.678]]),
     "Tensor\n     [[0.001, 12345.6777344],]"),
    ("tf.scalar('hi')", lambda: nf.scalar("hi"), "Tensor\n    hi"),
    ("tf.linspace(0, 1, 3)", lambda: nf.linspace(0, 1, 3), "Tensor\n    [0, 0.5, 1]"),
    ("tf.zeros([2, 25])", lambda: nf.zeros([2, 25]),
     "Tensor\n    [[0, 0, 0, ..., 0, 0, 0],\n     [0, 0, 0, ..., 0, 0, 0]]"),
    ("tf.zeros([1, 1, 1])", lambda: nf.zeros([1, 1, 1]), "Tensor\n     [ [[0],]]"),
    ("tf.tensor([[['a','bb']]])", lambda: nf.tensor([[["a", "bb"]]]), "Tensor\n     [ [['a', 'bb'],]]"),
    ("tf.scalar(-0.5)", lambda: nf.scalar(-0.5), "Tensor\n    -0.5"),
    ("tf.tensor([1/3])", lambda: nf.tensor([1 / 3]), "Tensor\n    [0.3333333]"),
    ("tf.zeros([22, 22])", lambda: nf.zeros([22, 22]),
     "Tensor\n    [[0, 0, 0, ..., 0, 0, 0],\n     [0, 0, 0, ..., 0, 0, 0],\n     [0, 0, 0, ..., 0, 0, 0],\n"
     "     ...,\n     [0, 0, 0, ..., 0, 0, 0],\n     [0, 0, 0, ..., 0, 0, 0],\n     [0, 0, 0, ..., 0, 0, 0]]"),
    ("tf.complex(1.5, -2)", lambda: nf.scalar(np.complex64(1.5 - 2j)), "Tensor\n    1.5 + -2j"),
    ("tf.scalar(NaN)", lambda: nf.scalar(np.nan), "Tensor\n    NaN"),
    ("tf.scalar(-Infinity)", lambda: nf.scalar(-np.inf), "Tensor\n    -Infinity"),
    ("tf.tensor([-0])", lambda: nf.tensor([-0.0]), "Tensor\n    [0]"),
    ("tf.tensor([1e21, -1e-9])", lambda: nf.tensor([1e21, -1e-9]), "Tensor\n    [1.0000000200408773e+21, 0]"),
    ("tf.tensor([[NaN, 1],[2.5, -Infinity]])", lambda: nf.tensor([[np.nan, 1], [2.5, -np.inf]]),
     "Tensor\n    [[NaN, 1        ],\n     [2.5, -Infinity]]"),
    ("tf.tensor([['a','bcd'],['ef','g']])", lambda: nf.tensor([["a", "bcd"], ["ef", "g"]]),
     "Tensor\n    [['a' , 'bcd'],\n     ['ef', 'g'  ]]"),
    ("tf.tensor([-5, 12, 7], undefined, 'int32')", lambda: nf.tensor([-5, 12, 7], dtype="int32"),
     "Tensor\n    [-5, 12, 7]"),
    ("tf.scalar(123456789)", lambda: nf.scalar(123456789), "Tensor\n    123456792"),
    ("tf.tensor([[1, 2, 3]])", lambda: nf.tensor([[1, 2, 3]]), "Tensor\n     [[1, 2, 3],]"),
    ("tf.tensor([2.675, 1.0000001, 0.12345678])", lambda: nf.tensor([2.675, 1.0000001, 0.12345678]),
     "Tensor\n    [2.675, 1.0000001, 0.1234568]"),
    ("tf.scalar(1e-7)", lambda: nf.scalar(1e-7), "Tensor\n    1.0000000116860974e-7"),
]  # fmt: skip


@pytest.mark.parametrize(("make", "expected"), [c[1:] for c in EXTRA_RECORDED], ids=[c[0] for c in EXTRA_RECORDED])
def test_to_string_matches_more_tfjs_outputs(make, expected):
    assert _printed(make, False) == expected


def test_verbose_header_int32():
    # tf.tensor([[1,2],[3,4]], undefined, 'int32').toString(true) in TF.js 4.22
    expected = "Tensor\n  dtype: int32\n  rank: 2\n  shape: [2,2]\n  values:\n    [[1, 2],\n     [3, 4]]"
    assert _printed(lambda: nf.tensor([[1, 2], [3, 4]], dtype="int32"), True) == expected


def test_print_writes_to_string(capsys):
    t = nf.tensor([[1.5, -2], [3, 40.25]])
    try:
        t.print()
        t.print(True)
        print(t)
    finally:
        t.dispose()
    plain, verbose = _fixture()[1]
    assert capsys.readouterr().out == plain + "\n" + verbose + "\n" + plain + "\n"


def test_repr_is_verbose():
    t = nf.tensor([True, False], None, "bool")
    try:
        assert repr(t) == _fixture()[5][1]
    finally:
        t.dispose()


def test_disposed_tensor_prints_without_raising():
    t = nf.tensor([[1.0, 2.0]])
    t.dispose()
    text, rep = str(t), repr(t)
    assert "disposed" in text and "disposed" in rep
    with pytest.raises(nf.DisposedTensorError):
        t.to_string()


def test_repr_of_a_large_tensor_is_one_line():
    t = nf.zeros([1, 600, 600, 3])
    try:
        rep = repr(t)  # no formatting of the values (asyncio.run builds it on every run)
        assert rep == f"<ndflow.Tensor id={t.id} shape=[1, 600, 600, 3] dtype=float32 (print() shows the values)>"
        assert str(t).startswith("Tensor\n    [[[[0, 0, 0],")  # print/str keep TF.js's text
    finally:
        t.dispose()
    small = nf.zeros([10, 100])  # at the limit: TF.js's verbose text
    try:
        assert repr(small).startswith("Tensor\n  dtype: float32\n  rank: 2\n  shape: [10,100]")
    finally:
        small.dispose()


def _every_value_width(column: np.ndarray, dtype: str) -> int:
    return max(len(tensor_format._value(v, dtype)) for v in column)


@pytest.mark.parametrize("scale", [1e-9, 1e-7, 1e-3, 1.0, 10.0, 1e5, 1e7, 1e8, 1e20, 1e22, 1e38])
@pytest.mark.parametrize("kind", ["normal", "integral", "positive"])
def test_column_width_equals_formatting_every_value(scale, kind):
    """The bounded search finds the same widest text as writing every value of the column."""
    rng = np.random.default_rng(int(np.log10(scale) * 10) + 100 + len(kind))
    x = rng.standard_normal(300) * scale
    x = {"normal": x, "integral": np.round(x), "positive": np.abs(x)}[kind]
    column = x.astype(np.float32)
    assert tensor_format._column_width(column, "float32") == _every_value_width(column, "float32")


@pytest.mark.parametrize(
    "column",
    [
        np.array([0.5] * 99 + [-0.5], np.float32),
        np.array([9.99999999] * 70 + [-9.9999999] * 30, np.float32),
        np.array([4.9e-8, 5e-8, 1e-7, 1.5e-7] * 30, np.float32),
        np.array([1.0, np.nan] * 50, np.float32),
        np.array([1.0] * 99 + [-np.inf], np.float32),
        np.array([-0.0] * 100, np.float32),
        np.arange(-(2**31), 2**31 - 1, 2**24, dtype=np.int64).astype(np.int32),
        np.arange(-50, 50, dtype=np.int32),
    ],
    ids=["sign", "carry", "tiny", "nan", "-inf", "-0", "int32-wide", "int32-small"],
)
def test_column_width_edge_values(column):
    dtype = "int32" if column.dtype == np.int32 else "float32"
    assert tensor_format._column_width(column, dtype) == _every_value_width(column, dtype)
