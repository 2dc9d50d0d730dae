"""The autodiff API: grad, grads, value_and_grad, value_and_grads, variable_grads, custom_grad —
TF.js's calling conventions, error messages, and memory (nothing the tape saved survives a call)."""

from __future__ import annotations

import numpy as np
import pytest

import ndflow as nf
from ndflow.core.engine import ENGINE
from ndflow.core.kernel_registry import get_gradient, register_gradient, unregister_gradient
from ndflow.core.tensor import DisposedTensorError


def values(t) -> list:
    return np.asarray(t.numpy()).tolist()


@pytest.fixture
def x():
    t = nf.tensor([1.0, -2.0, 3.0])
    yield t
    t.dispose()


# ----------------------------------------------------------------------------- conventions


def test_grad_returns_one_tensor_seeded_with_ones(x):
    g = nf.grad(lambda t: t.square())(x)
    assert isinstance(g, nf.Tensor) and g.shape == (3,) and g.dtype == "float32"
    assert values(g) == [2.0, -4.0, 6.0]
    g.dispose()


def test_grad_with_dy(x):
    dy = nf.tensor([1.0, 0.5, -1.0])
    g = nf.grad(lambda t: t.square())(x, dy)
    assert values(g) == [2.0, -2.0, -6.0]
    nf.dispose([dy, g])


def test_grad_accepts_numbers_and_lists():
    def run():
        g = nf.grad(lambda t: t.square())([1.0, 2.0])
        s = nf.grad(lambda t: t.pow(3))(2.0)
        return [values(g), values(s)]

    assert nf.tidy(run) == [[2.0, 4.0], 12.0]  # tidy: see test_converted_arguments_are_freed


def test_converted_arguments_are_freed():
    def run():
        before = nf.memory().num_tensors
        gs = nf.grads(lambda a, b: nf.mul(a, b))([1.0, 2.0])
        leaked = nf.memory().num_tensors - before - len(gs)
        nf.dispose(gs)
        return leaked

    assert nf.tidy(run) == 0


def test_grads_returns_a_list_in_argument_order(x):
    y = nf.tensor([2.0, 0.5, -1.0])
    gs = nf.grads(lambda a, b: nf.mul(a, b))([x, y])
    assert isinstance(gs, list) and len(gs) == 2
    assert values(gs[0]) == [2.0, 0.5, -1.0] and values(gs[1]) == [1.0, -2.0, 3.0]
    dy = nf.tensor([1.0, 2.0, 3.0])
    gd = nf.grads(lambda a, b: nf.mul(a, b))([x, y], dy)
    assert values(gd[0]) == [2.0, 1.0, -3.0]
    nf.dispose([y, dy, *gs, *gd])


def test_grads_of_the_same_tensor_twice(x):
    """Both entries are the total derivative with respect to that tensor (as TF.js, by tensor id)."""
    ga, gb = nf.grads(lambda a, b: nf.mul(a, b))([x, x])
    assert values(ga) == values(gb) == [2.0, -4.0, 6.0]
    nf.dispose([ga, gb])


def test_value_and_grad(x):
    value, g = nf.value_and_grad(lambda t: t.square().sum())(x)
    assert values(value) == 14.0 and values(g) == [2.0, -4.0, 6.0]
    nf.dispose([value, g])


def test_value_and_grads(x):
    y = nf.tensor([2.0, 0.5, -1.0])
    result = nf.value_and_grads(lambda a, b: nf.mul(a, b).sum())([x, y])
    assert values(result.value) == pytest.approx(2.0 - 1.0 - 3.0)
    assert values(result.grads[0]) == [2.0, 0.5, -1.0] and values(result.grads[1]) == [1.0, -2.0, 3.0]
    nf.dispose([y, result.value, *result.grads])


def test_higher_order(x):
    g3 = nf.grad(nf.grad(nf.grad(lambda t: t.pow(4))))(x)
    assert values(g3) == pytest.approx([24.0, -48.0, 72.0])
    g3.dispose()


def test_integer_path_is_a_stop_gradient(x):
    """A cast to int32 carries no gradient: the rounded factor acts as a constant."""
    g = nf.grad(lambda t: nf.mul(t, nf.cast(nf.cast(t, "int32"), "float32")))(x)
    assert values(g) == [1.0, -2.0, 3.0]
    g.dispose()


def test_gradient_of_a_cast_to_int_is_float_ones(x):
    g = nf.grad(lambda t: nf.cast(t, "int32"))(x)  # as TF.js
    assert g.dtype == "float32" and values(g) == [1.0, 1.0, 1.0]
    g.dispose()


def test_grads_inside_tidy_keeps_only_the_results(x):
    before = nf.memory().num_tensors
    g = nf.tidy(lambda: nf.grad(lambda t: t.square().exp().sum())(x))
    assert nf.memory().num_tensors == before + 1
    g.dispose()


# ----------------------------------------------------------------------------- variables


def test_variable_grads_all_trainable_variables():
    w = nf.variable([1.0, 2.0], name="api_w")
    b = nf.variable(0.5, name="api_b")
    frozen = nf.variable([3.0, 4.0], trainable=False, name="api_frozen")
    try:
        value, grads = nf.variable_grads(lambda: nf.add(nf.mul(w, frozen).sum(), b))
        assert values(value) == 11.5
        assert set(grads) == {"api_w", "api_b"}
        assert values(grads["api_w"]) == [3.0, 4.0] and values(grads["api_b"]) == 1.0
        nf.dispose([value, *grads.values()])
        value, grads = nf.variable_grads(lambda: nf.mul(w, w).sum(), [w])
        assert set(grads) == {"api_w"} and values(grads["api_w"]) == [2.0, 4.0]
        nf.dispose([value, *grads.values()])
    finally:
        nf.dispose_variables()


def test_variable_grads_leaves_out_unconnected_variables():
    w = nf.variable([1.0], name="api_used")
    nf.variable([1.0], name="api_unused")
    try:
        value, grads = nf.variable_grads(lambda: w.square().sum())
        assert set(grads) == {"api_used"}
        nf.dispose([value, *grads.values()])
    finally:
        nf.dispose_variables()


def test_variable_as_an_argument_of_grad():
    w = nf.variable([2.0, 3.0], name="api_arg")
    try:
        g = nf.grad(lambda t: t.square())(w)
        assert values(g) == [4.0, 6.0]
        g.dispose()
    finally:
        nf.dispose_variables()


# ----------------------------------------------------------------------------- custom_grad


def test_custom_grad_replaces_the_gradient(x):
    def f(t, save):
        save([t])
        return {"value": t.square(), "grad_func": lambda dy, saved: [nf.mul(dy, nf.mul(saved[0], 3.0))]}

    square3 = nf.custom_grad(f)
    y = square3(x)
    g = nf.grad(square3)(x)
    assert values(y) == [1.0, 4.0, 9.0] and values(g) == [3.0, -6.0, 9.0]
    nf.dispose([y, g])


def test_custom_grad_tuple_form_and_two_inputs(x):
    y = nf.tensor([2.0, 2.0, 2.0])
    f = nf.custom_grad(lambda a, b, save: (nf.mul(a, b), lambda dy, saved: [nf.mul(dy, 10.0), nf.mul(dy, 20.0)]))
    ga, gb = nf.grads(f)([x, y])
    assert values(ga) == [10.0] * 3 and values(gb) == [20.0] * 3
    nf.dispose([y, ga, gb])


def test_custom_grad_with_the_wrong_number_of_gradients(x):
    f = nf.custom_grad(lambda a, save: (a.square(), lambda dy, saved: [dy, dy]))
    with pytest.raises(ValueError, match="2 gradients for 1 inputs"):
        nf.grad(f)(x)


def test_custom_grad_with_a_bad_result(x):
    with pytest.raises(TypeError, match="custom_grad"):
        nf.tidy(lambda: nf.custom_grad(lambda a, save: a.square())(x))


# ----------------------------------------------------------------------------- errors


def test_non_tensor_argument(x):
    with pytest.raises(TypeError, match="grad: argument 'x' must be a Tensor or numbers, got str"):
        nf.grad(lambda t: t.square())("abc")
    with pytest.raises(TypeError, match="grads: the arguments must be a list of tensors, got Tensor"):
        t = nf.tensor([1.0])
        try:
            nf.grads(lambda a: a.square())(t)
        finally:
            t.dispose()
    with pytest.raises(TypeError, match=r"grads: argument 'args\[1\]' must be a Tensor or numbers, got dict"):
        nf.grads(lambda a, b: a)([x, {}])


def test_empty_argument_list():
    with pytest.raises(ValueError, match="list of tensors to differentiate with respect to is empty"):
        nf.grads(lambda: nf.scalar(1.0))([])


def test_disposed_input(x):
    d = nf.tensor([1.0])
    d.dispose()
    with pytest.raises(DisposedTensorError, match="disposed"):
        nf.grad(lambda t: t.square())(d)
    with pytest.raises(DisposedTensorError, match="disposed"):
        nf.grads(lambda a, b: nf.mul(a, b))([x, d])


def test_disposed_variable():
    v = nf.variable([1.0, 2.0], name="api_disposed")
    v.dispose()
    try:
        with pytest.raises(DisposedTensorError, match="disposed"):
            nf.variable_grads(lambda: v.square().sum(), [v])
        with pytest.raises(DisposedTensorError, match="disposed"):
            nf.grad(lambda t: t.square())(v)
    finally:
        nf.dispose_variables()


def test_y_does_not_depend_on_x(x):
    c = nf.tensor([1.0, 1.0, 1.0])
    try:
        with pytest.raises(ValueError, match="y does not depend on x"):
            nf.grad(lambda t: c.square())(x)
        with pytest.raises(ValueError, match="not connected to y"):
            nf.grads(lambda a, b: a.square())([x, c])
    finally:
        c.dispose()


def test_variable_grads_of_a_non_scalar():
    v = nf.variable([1.0, 2.0], name="api_vector")
    try:
        with pytest.raises(ValueError, match=r"variable_grads: f must return a scalar, got shape \[2\]"):
            nf.variable_grads(lambda: v.square())
    finally:
        nf.dispose_variables()


def test_variable_grads_errors():
    with pytest.raises(ValueError, match="no trainable variables"):
        nf.variable_grads(lambda: nf.scalar(1.0))
    t = nf.tensor([1.0])
    nf.variable([1.0], name="api_lonely")
    try:
        with pytest.raises(TypeError, match="var_list must hold Variables, got Tensor"):
            nf.variable_grads(lambda: t.sum(), [t])
        with pytest.raises(ValueError, match="no variable is connected"):
            nf.variable_grads(lambda: t.sum())
    finally:
        t.dispose()
        nf.dispose_variables()


def test_f_must_return_a_tensor(x):
    with pytest.raises(TypeError, match="f must return a Tensor, got list"):
        nf.grad(lambda t: [t.square()])(x)


def test_bad_dy(x):
    wrong_shape = nf.tensor([1.0, 2.0])
    wrong_dtype = nf.tensor([1, 2, 3], None, "int32")
    try:
        with pytest.raises(ValueError, match=r"dy has shape \[2\] but y=f\(x\) has shape \[3\]"):
            nf.grad(lambda t: t.square())(x, wrong_shape)
        with pytest.raises(TypeError, match="dy must be float32, got int32"):
            nf.grad(lambda t: t.square())(x, wrong_dtype)
    finally:
        nf.dispose([wrong_shape, wrong_dtype])


@pytest.fixture
def no_square_gradient():
    """The Square kernel without its gradient, for the duration of a test."""
    original = get_gradient("Square")
    unregister_gradient("Square")
    yield
    register_gradient("Square", original.grad_func, original.inputs_to_save, original.outputs_to_save)


def test_kernel_without_gradient_names_it(x, no_square_gradient):
    with pytest.raises(NotImplementedError, match="no gradient function is registered for kernel 'Square'"):
        nf.grad(lambda t: nf.mul(t.square(), t))(x)


# ----------------------------------------------------------------------------- memory


def _tape_is_clear() -> bool:
    return ENGINE.tape is None and ENGINE.gradient_depth == 0 and not ENGINE._scopes


def test_memory_returns_after_grads(x):
    before = nf.memory().num_tensors

    def f(t):  # kernels that save inputs, outputs, and both
        return nf.softmax(nf.mat_mul(nf.reshape(t, [1, 3]), nf.reshape(t.exp(), [3, 1]))).sum().add(t.pow(3).sum())

    g = nf.grad(f)(x)
    assert nf.memory().num_tensors == before + 1 and _tape_is_clear()
    g.dispose()
    value, gs = nf.value_and_grads(lambda a: f(a))([x])
    assert nf.memory().num_tensors == before + 2 and _tape_is_clear()
    nf.dispose([value, *gs])
    g2 = nf.grad(nf.grad(lambda t: t.pow(3).tanh()))(x)
    assert nf.memory().num_tensors == before + 1 and _tape_is_clear()
    g2.dispose()
    assert nf.memory().num_tensors == before


@pytest.mark.parametrize(
    "fails",
    [
        lambda t, c: nf.grad(lambda u: [u.square()])(t),  # f returns a list
        lambda t, c: nf.grad(lambda u: nf.mul(u.square(), u))(t),  # a kernel without a gradient
        lambda t, c: nf.grad(lambda u: u.exp())(t, c),  # dy of the wrong shape
        lambda t, c: nf.grad(nf.grad(lambda u: u.square().exp()))(t),  # failing inside a nested grad
        lambda t, c: nf.grad(lambda u: (nf.mul(u, c), 1 / 0))(t),  # f raises after making a tensor
    ],
    ids=["not_a_tensor", "no_gradient", "bad_dy", "nested", "f_raises"],
)
def test_memory_returns_after_a_failed_gradient(x, fails, no_square_gradient):
    c = nf.tensor([1.0])
    before = nf.memory().num_tensors
    with pytest.raises((ValueError, TypeError, NotImplementedError, ZeroDivisionError)):
        fails(x, c)
    assert _tape_is_clear()
    assert nf.memory().num_tensors == before
    c.dispose()


def test_saved_tensors_are_freed_with_the_tape(x):
    """The tape's saved clones share data with the inputs; after grad they are gone."""
    before = nf.memory()
    g = nf.grad(lambda t: nf.mul(t.exp(), t.square()).sum())(x)
    after = nf.memory()
    assert after.num_tensors == before.num_tensors + 1
    assert after.num_data_buffers == before.num_data_buffers + 1
    g.dispose()
