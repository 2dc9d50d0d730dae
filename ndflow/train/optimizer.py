"""The ``Optimizer`` base class: minimize / apply_gradients, slot variables, weights and config.

As in TF.js 4.22, an optimizer keeps its per-variable state ("slot" variables such as Adam's
``<var>/m``) by *position* in the list of gradients it is given, so that ``get_weights`` /
``set_weights`` move the state between sessions whose variable names differ. Beyond TF.js:
applying a gradient to a slot of another shape raises instead of broadcasting silently,
``set_weights`` frees the slot variables it replaces, ``get_weights`` returns tensors the caller
owns (dispose them), and hyper-parameter scalars are plain numbers, not tensors (the optimizer
holds no tensor but its slot variables).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, NamedTuple

import numpy as np

from ..core.engine import ENGINE
from ..core.globals import dispose
from ..core.tensor import DisposedTensorError, Tensor, Variable
from ..gradients import variable_grads
from ..gradients.api import VariableGrads
from ..ops import clone, scalar, variable, zeros_like

#: Optimizer classes by TF.js class name ('SGD', 'Adam', ...), filled as subclasses are defined.
OPTIMIZER_CLASSES: dict[str, type[Optimizer]] = {}

NamedTensor = dict  # {'name': str, 'tensor': Tensor}, TF.js's NamedTensor


class OptimizerVariable(NamedTuple):
    """A slot variable and its canonical name (``<variable name>/<suffix>``), TF.js's OptimizerVariable."""

    original_name: str
    variable: Variable


def _camel_to_snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def check_number(value: Any, name: str, owner: str, allow_none: bool = False) -> float | None:
    """``value`` as a float, or a TypeError naming the optimizer and the argument."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise TypeError(f"{owner}: {name} must be a number, got {type(value).__name__}")
    return float(value)


def _tidy(fn: Callable[[], Any]) -> Any:
    """``tidy(fn)`` straight on the engine: the public ``tidy`` inspects ``fn``'s signature on every call,
    which costs more than a small update kernel (the optimizer runs one per variable per step)."""
    return ENGINE.tidy(None, fn, (), {})


def f32(value: float) -> np.float32:
    """A hyper-parameter as TF.js sees it in a kernel: rounded to float32."""
    return np.float32(value)


class Optimizer:
    """Base class of the optimizers: ``minimize``, ``compute_gradients``, ``apply_gradients``."""

    #: TF.js's ``className`` (what ``get_class_name`` and serialization use).
    class_name: ClassVar[str] = "Optimizer"
    #: Suffixes of the slot variables kept per trained variable, in ``get_weights`` order.
    slot_suffixes: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "class_name" in cls.__dict__:
            OPTIMIZER_CLASSES[cls.class_name] = cls

    def __init__(self) -> None:
        self._iterations = 0
        self._slots: list[list[OptimizerVariable]] = [[] for _ in self._slot_suffixes()]

    # -- what subclasses provide ------------------------------------------------------------------
    def _slot_suffixes(self) -> tuple[str, ...]:
        """The slot kinds of this instance (RMSProp adds ``mg`` when centered)."""
        return self.slot_suffixes

    def _slot_initial(self, suffix: str, value: Variable) -> Tensor:
        """The initial value of a new slot variable for ``value`` (zeros; Adagrad fills)."""
        return zeros_like(value)

    def _begin_step(self) -> Any:
        """Per-step state shared by every variable (Adam's bias corrections); None by default."""
        return None

    def _end_step(self) -> None:
        """Advance per-step state after every variable is updated."""

    def _update(self, value: Variable, gradient: Tensor, slots: list[Variable], step: Any) -> None:
        """Assign the new value of ``value`` (and of its slots), given its gradient."""
        raise NotImplementedError(f"{type(self).__name__} must implement _update")

    def _restore_step_state(self) -> None:
        """Rebuild per-step state from ``iterations`` after ``set_weights``."""

    # -- training ---------------------------------------------------------------------------------
    @property
    def iterations(self) -> int:
        """How many times ``apply_gradients`` (or ``minimize``) has run."""
        return self._iterations

    def get_class_name(self) -> str:
        """TF.js's class name, e.g. ``'Adam'``."""
        return self.class_name

    def minimize(
        self, f: Callable[[], Tensor], return_cost: bool = False, var_list: Sequence[Variable] | None = None
    ) -> Tensor | None:
        """Run ``f`` (which returns a scalar) and take one step that lowers it; the cost if ``return_cost``."""
        value, grads = self._gradients(f, var_list, "minimize")
        return self.apply_computed(value, grads, return_cost, var_list)

    def apply_computed(
        self,
        value: Tensor,
        grads: Mapping[str, Tensor],
        return_cost: bool = False,
        var_list: Sequence[Variable] | None = None,
    ) -> Tensor | None:
        """The second half of :meth:`minimize`: apply ``grads`` (the gradients of ``value`` by variable name, as
        ``compute_gradients`` returns them), free them, and return ``value`` if ``return_cost`` (else free it)."""
        try:
            if var_list is not None:
                self._apply([(v.name, grads.get(v.name)) for v in var_list], "minimize")
            else:
                self._apply(list(grads.items()), "minimize")
        except BaseException:
            dispose([value, grads])
            raise
        dispose(grads)
        if return_cost:
            return value
        value.dispose()
        return None

    def compute_gradients(self, f: Callable[[], Tensor], var_list: Sequence[Variable] | None = None) -> VariableGrads:
        """``(value, grads)``: the scalar ``f()`` and its gradients by variable name (``variable_grads``)."""
        return self._gradients(f, var_list, "compute_gradients")

    def apply_gradients(self, variable_gradients: Mapping[str, Tensor] | Sequence[NamedTensor]) -> None:
        """Update variables from gradients: a dict name -> tensor, or a list of ``{'name', 'tensor'}``."""
        self._apply(self._named_gradients(variable_gradients), "apply_gradients")

    def _where(self, op: str) -> str:
        return f"{type(self).__name__}.{op}"

    def _gradients(self, f: Callable[[], Tensor], var_list: Sequence[Variable] | None, op: str) -> VariableGrads:
        where = self._where(op)
        if not callable(f):
            raise TypeError(f"{where}: f must be a function returning a scalar, got {type(f).__name__}")
        if var_list is not None:
            if isinstance(var_list, Tensor) or not isinstance(var_list, Sequence):
                raise TypeError(f"{where}: var_list must be a list of Variables, got {type(var_list).__name__}")
            for v in var_list:
                if not isinstance(v, Variable):
                    raise TypeError(f"{where}: var_list must hold Variables, got {type(v).__name__}")
                if v.is_disposed:
                    raise DisposedTensorError(f"{where}: variable '{v.name}' in var_list is disposed")
        try:
            return variable_grads(f, list(var_list) if var_list is not None else None)
        except (ValueError, TypeError) as e:
            msg = str(e)
            if msg.startswith("variable_grads: "):
                raise type(e)(f"{where}: {msg[len('variable_grads: ') :]}") from e
            raise
        except DisposedTensorError as e:
            raise DisposedTensorError(f"{where}: f used a disposed tensor or variable: {e}") from e

    def _named_gradients(self, variable_gradients: Any) -> list[tuple[str, Tensor | None]]:
        where = self._where("apply_gradients")
        if isinstance(variable_gradients, Mapping):
            return [(str(k), g) for k, g in variable_gradients.items()]
        if isinstance(variable_gradients, Sequence) and not isinstance(variable_gradients, str | Tensor):
            out = []
            for i, item in enumerate(variable_gradients):
                if not isinstance(item, Mapping) or "name" not in item or "tensor" not in item:
                    raise TypeError(f"{where}: entry {i} must be a dict with 'name' and 'tensor', got {item!r}")
                out.append((item["name"], item["tensor"]))
            return out
        raise TypeError(
            f"{where}: expected a dict of name -> gradient or a list of {{'name', 'tensor'}}, "
            f"got {type(variable_gradients).__name__}"
        )

    def _apply(self, items: list[tuple[str, Tensor | None]], op: str) -> None:
        where = self._where(op)
        suffixes = self._slot_suffixes()
        targets: list[tuple[Variable, Tensor | None]] = []
        for i, (name, grad) in enumerate(items):  # validate everything before changing anything
            value = ENGINE.variables.get(name)
            if value is None:
                raise ValueError(f"{where}: there is no variable named '{name}' (it was disposed or never created)")
            if grad is not None:
                if not isinstance(grad, Tensor):
                    raise TypeError(f"{where}: the gradient of '{name}' must be a Tensor, got {type(grad).__name__}")
                if grad.is_disposed:
                    raise DisposedTensorError(f"{where}: the gradient of '{name}' is disposed")
                if grad.shape != value.shape:
                    raise ValueError(
                        f"{where}: the gradient of '{name}' has shape {list(grad.shape)}, "
                        f"the variable has shape {list(value.shape)}"
                    )
            for k in range(len(suffixes)):
                if i < len(self._slots[k]) and self._slots[k][i].variable.shape != value.shape:
                    slot = self._slots[k][i]
                    raise ValueError(
                        f"{where}: slot {i} ('{slot.original_name}', shape {list(slot.variable.shape)}) does not "
                        f"fit variable '{name}' of shape {list(value.shape)}; the optimizer keeps its state by the "
                        "position of each variable in the gradient list, so pass variables in the same order"
                    )
            targets.append((value, grad))

        def step() -> None:
            state = self._begin_step()
            for i, (value, grad) in enumerate(targets):
                slots = [self._slot(k, suffix, i, value) for k, suffix in enumerate(suffixes)]
                if grad is not None:
                    _tidy(lambda value=value, grad=grad, slots=slots: self._update(value, grad, slots, state))
            self._end_step()

        _tidy(step)
        self._iterations += 1

    def _slot(self, k: int, suffix: str, i: int, value: Variable) -> Variable:
        slots = self._slots[k]
        if i == len(slots):
            slot = _tidy(lambda: variable(self._slot_initial(suffix, value), trainable=False))
            slots.append(OptimizerVariable(f"{value.name}/{suffix}", slot))
        return slots[i].variable

    # -- state ------------------------------------------------------------------------------------
    def get_weights(self) -> list[NamedTensor]:
        """``[{'name': 'iter', 'tensor': int32 scalar}, {'name': '<var>/<slot>', 'tensor': ...}, ...]``.

        Slots come kind by kind (all ``/m`` then all ``/v``), as TF.js orders them. The tensors are
        new (clones of the slot variables): the caller owns and disposes them.
        """
        weights: list[NamedTensor] = [{"name": "iter", "tensor": scalar(self._iterations, "int32")}]
        for slots in self._slots:
            weights.extend({"name": s.original_name, "tensor": clone(s.variable)} for s in slots)
        return weights

    def set_weights(self, weight_values: Sequence[NamedTensor]) -> None:
        """Restore ``iterations`` and the slot variables from ``get_weights``'s list (copies the tensors)."""
        where = self._where("set_weights")
        if isinstance(weight_values, Tensor | Mapping) or not isinstance(weight_values, Sequence):
            raise TypeError(f"{where}: expected a list of {{'name', 'tensor'}}, got {type(weight_values).__name__}")
        if not weight_values:
            raise ValueError(f"{where}: the list of weights is empty (the first entry must be 'iter')")
        for i, w in enumerate(weight_values):
            if not isinstance(w, Mapping) or not isinstance(w.get("tensor"), Tensor) or "name" not in w:
                raise TypeError(f"{where}: entry {i} must be a dict with 'name' and a 'tensor', got {w!r}")
            w["tensor"].throw_if_disposed()
        it = weight_values[0]["tensor"]
        if it.size != 1:
            raise ValueError(f"{where}: the first weight must be the iteration count, got shape {list(it.shape)}")
        value = float(it.data_sync()[0])
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"{where}: the iteration count must be a finite number >= 0, got {value}")
        rest = list(weight_values[1:])
        kinds = len(self._slot_suffixes())
        if kinds == 0 and rest:
            raise ValueError(f"{where}: {self.class_name} optimizer does not have settable weights")
        if kinds and len(rest) % kinds:
            raise ValueError(
                f"{where}: expected {kinds} slot weights per variable ({', '.join(self._slot_suffixes())}), "
                f"got {len(rest)} weights after 'iter'"
            )
        n = len(rest) // kinds if kinds else 0
        self._dispose_slots()
        self._slots = [
            [
                OptimizerVariable(str(w["name"]), variable(w["tensor"], trainable=False))
                for w in rest[k * n : (k + 1) * n]
            ]
            for k in range(kinds)
        ]
        self._iterations = int(value)
        self._restore_step_state()

    def _dispose_slots(self) -> None:
        for slots in self._slots:
            for s in slots:
                s.variable.dispose()
        self._slots = [[] for _ in self._slot_suffixes()]

    def dispose(self) -> None:
        """Free the slot variables (the optimizer can still be used: they are re-created as zeros)."""
        self._dispose_slots()

    # -- serialization ----------------------------------------------------------------------------
    def get_config(self) -> dict[str, Any]:
        """The constructor arguments, with TF.js's camelCase keys (``{'learningRate': 0.1, ...}``)."""
        raise NotImplementedError(f"{type(self).__name__} must implement get_config")

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> Optimizer:
        """A new optimizer from ``get_config``'s dict (camelCase keys, as TF.js serializes them)."""
        if not isinstance(config, Mapping):
            raise TypeError(f"{cls.__name__}.from_config: config must be a dict, got {type(config).__name__}")
        return cls(**{_camel_to_snake(k): v for k, v in config.items()})

    def __repr__(self) -> str:
        args = ", ".join(f"{_camel_to_snake(k)}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"


def serialize(optimizer: Optimizer) -> dict[str, Any]:
    """``{'className': 'Adam', 'config': {...}}``, TF.js's serialized form of an optimizer."""
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"serialize: expected an Optimizer, got {type(optimizer).__name__}")
    return {"className": optimizer.get_class_name(), "config": optimizer.get_config()}


def deserialize(config: Mapping[str, Any]) -> Optimizer:
    """An optimizer from ``{'className': ..., 'config': {...}}`` (the class found by TF.js class name)."""
    if not isinstance(config, Mapping) or "className" not in config:
        raise ValueError(f"deserialize: expected {{'className': ..., 'config': {{...}}}}, got {config!r}")
    cls = OPTIMIZER_CLASSES.get(config["className"])
    if cls is None:
        raise ValueError(
            f"deserialize: unknown optimizer class '{config['className']}' "
            f"(known: {', '.join(sorted(OPTIMIZER_CLASSES))})"
        )
    return cls.from_config(config.get("config") or {})
