"""The TF.js oracle fixtures on the webgpu backend with float16 storage (flag WEBGPU_FLOAT16), at TF.js's 16-bit
tolerance (1e-1; see oracle_cases.tolerance). Every fixture case that ndflow matches on float32 backends runs
here; the few whose values f16 cannot represent are listed in F16_LIMITS with the reason, and must fail (strict
xfail): if one starts passing, the list is wrong."""

from __future__ import annotations

import importlib
import inspect

import pytest

import ndflow as nf

pytest.importorskip("wgpu", reason="the webgpu backend needs wgpu (pip install -e '.[webgpu]')")
# values depend on the adapter: CI reruns these per wgpu backend (WGPU_BACKEND_TYPE=OpenGL pytest -m adapter)
pytestmark = pytest.mark.adapter

# The float32 oracle tests whose cases run here: (module, test function, list of cases).
ORACLE_TESTS = [
    ("test_conv", "test_conv_matches_tfjs", "PLAIN"),
    ("test_core_ops_oracle", "test_core_op_matches_tfjs", "CASES"),
    ("test_elementwise", "test_elementwise_matches_tfjs", "CASES"),
    ("test_image", "test_image_op_matches_tfjs", "CASES"),
    ("test_linalg", "test_linalg_op_matches_tfjs", "CASES"),
    ("test_losses", "test_loss_matches_tfjs", "CASES"),
    ("test_pool_norm", "test_pool_norm_matches_tfjs", "CASES"),
    ("test_ragged_rnn", "test_ragged_rnn_op_matches_tfjs", "CASES"),
    ("test_reduction", "test_reduction_op_matches_tfjs", "CASES"),
    ("test_selection", "test_selection_op_matches_tfjs", "CASES"),
    ("test_sparse_string", "test_sparse_string_op_matches_tfjs", "CASES"),
    ("test_transform", "test_transform_matches_tfjs", "CASES"),
]

F16_LIMITS = {
    "is_inf__special": "3.4e38 overflows f16 (max 65504) to Infinity",
    "is_finite__special": "3.4e38 overflows f16 (max 65504) to Infinity",
    "round__near_halves": "2.4999 and 2.5001 round to 2.5 in f16",
    "transform__nearest_projective": "projective coordinates from f16 inputs land on other pixels",
    "topk__unsorted_2d": "values equal after rounding to f16 tie in another order",
    "dilation2d__explicit_pad": "the cpu kernel's -9007199254740991 fill overflows f16 to -Infinity",
    "dilation2d__windows_outside_input": "the cpu kernel's -9007199254740991 fill overflows f16 to -Infinity",
    "cast__float32_to_int32_truncates": "3e9 overflows f16 to Infinity, which casts to 0",
    "cast__int32_to_float32": "16777217 overflows f16 (max 65504) to Infinity",
    "tan__special": "pi/2 rounded to f16 is another point of tan's pole",
    "ceil__special": "2.0000001 rounds to 2 in f16",
    "floor__special": "-2.0000001 rounds to -2 in f16",
    "round__special": "values near .5 round to .5 in f16",
    "sign__special": "1e-8 is below f16's smallest subnormal (6e-8): 0",
    "expm1__special": "1e-7 is near f16's smallest subnormal; 80 overflows f16",
}


def _params() -> list:
    params = []
    for module_name, test_name, cases_name in ORACLE_TESTS:
        module = importlib.import_module(module_name)
        test = getattr(module, test_name)
        for case in getattr(module, cases_name):
            reason = F16_LIMITS.get(case["id"])
            marks = [pytest.mark.xfail(reason=f"float16: {reason}", strict=True)] if reason else []
            params.append(pytest.param(test, case, id=f"{module_name}-{case['id']}", marks=marks))
    return params


@pytest.fixture
def float16(gpu):
    if not gpu.gpu.has_f16:
        pytest.skip("the adapter has no shader-f16")
    nf.env().set("WEBGPU_FLOAT16", True)
    assert nf.backend().float_precision() == 16
    yield gpu
    nf.env().set("WEBGPU_FLOAT16", False)


@pytest.mark.parametrize(("test", "case"), _params())
def test_fixture_case_in_float16(test, case, float16, monkeypatch):
    kwargs = {"monkeypatch": monkeypatch} if "monkeypatch" in inspect.signature(test).parameters else {}
    test(case, "webgpu", **kwargs)
