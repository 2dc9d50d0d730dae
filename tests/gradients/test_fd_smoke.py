"""The finite-difference checker itself catches a wrong gradient and passes a right one."""

import numpy as np
import pytest
from grad_cases import check_finite_differences

import ndflow as nf
from ndflow.core.kernel_registry import get_gradient, register_gradient


def test_right_gradient_passes():
    rng = np.random.default_rng(1)
    check_finite_differences(lambda a, b: nf.mul(nf.exp(a), b), [rng.standard_normal((2, 3)), rng.standard_normal(3)])


def test_wrong_gradient_is_caught():
    original = get_gradient("Exp")
    register_gradient("Exp", lambda dy, saved, attrs: [lambda: nf.mul(dy, 2.0)], outputs_to_save=[True])
    try:
        with pytest.raises(AssertionError, match="finite difference"):
            check_finite_differences(lambda a: nf.exp(a), [np.array([0.5, 1.5])])
    finally:
        register_gradient("Exp", original.grad_func, original.inputs_to_save, original.outputs_to_save)
