"""Data handling for training (TF.js's ``training_tensors`` / ``training_utils``): checks, batches, weights.

Inputs and targets may be tensors, numpy arrays or nested lists, one per model input / output
(a list, or a dict keyed by input / output name). Arrays are converted to tensors once (targets to
float32, as TF.js users pass them); rank-1 data gets a trailing axis. Whatever is made here is
returned with the list of tensors to free afterwards, so the caller's tensors are never disposed.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from ... import ops
from ...core.tensor import Tensor
from ...ops import tensor as make_tensor
from .. import losses
from ..utils import shape_str


def check_batch_size(batch_size: Any, what: str = "batch_size") -> None:
    """Raise unless ``batch_size`` is a positive integer."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, int | np.integer) or batch_size <= 0:
        raise ValueError(f"{what} is required to be a positive integer, but got {batch_size!r}")


def make_batches(size: int, batch_size: int) -> list[tuple[int, int]]:
    """``[(start, end), ...]`` covering ``range(size)`` (none for ``size == 0``), as TF.js's ``makeBatches``."""
    return [(start, min(size, start + batch_size)) for start in range(0, size, batch_size)]


def epoch_batches(n: int, batch_size: int, shuffle: bool | str, rng: np.random.Generator) -> list[np.ndarray]:
    """The sample indices of each batch of one pass over ``n`` samples, shuffled if asked.

    ``shuffle='batch'`` (beyond TF.js, which raises NotImplementedError) shuffles within batch-sized
    blocks, then the order of the blocks, as Keras does.
    """
    order = np.arange(n)
    if shuffle == "batch":
        blocks = [rng.permutation(order[s:e]) for s, e in make_batches(n, batch_size)]
        order = np.concatenate([blocks[i] for i in rng.permutation(len(blocks))]) if blocks else order
    elif shuffle:
        order = rng.permutation(n)
    return [order[s:e] for s, e in make_batches(n, batch_size)]


def as_tensor(value: Any, dtype: str | None, what: str, made: list[Tensor]) -> Tensor:
    """``value`` as a tensor of rank >= 2 (rank 1 gets a trailing axis); new tensors go to ``made``."""
    if isinstance(value, Tensor):
        t = value
        t.throw_if_disposed()
    else:
        try:
            array = np.asarray(value)
        except Exception as exc:  # noqa: BLE001 - any conversion failure is the caller's data
            raise TypeError(f"{what} must be a tensor or array-like, got {type(value).__name__}") from exc
        if array.dtype == object:
            raise TypeError(f"{what} must be a tensor or array-like of numbers, got {type(value).__name__}")
        t = make_tensor(array, dtype=dtype)
        made.append(t)
    if t.rank == 0:
        raise ValueError(f"{what}: expected a tensor of at least 1 dimension, but received a scalar")
    if t.rank == 1:
        t = ops.expand_dims(t, 1)
        made.append(t)
    return t


def standardize_input_data(
    data: Any,
    names: Sequence[str],
    shapes: Sequence[Any] | None,
    check_batch_axis: bool,
    what: str,
    dtypes: Sequence[str | None],
    made: list[Tensor],
) -> list[Tensor]:
    """One tensor per name from a tensor / array, a list, or a dict keyed by name, with shapes checked."""
    if not names:
        if data is not None and not (isinstance(data, list | tuple | dict) and len(data) == 0):
            raise ValueError(f"{what}: the model expected no data, but got some")
        return []
    if data is None:
        raise ValueError(f"{what} is required: the model needs data for {list(names)}")
    if isinstance(data, dict):
        missing = [name for name in names if data.get(name) is None]
        if missing:
            raise ValueError(f"{what}: no data provided for {missing}. Need data for each key in: {list(names)}")
        values = [data[name] for name in names]
    elif isinstance(data, list | tuple) and len(names) > 1:
        if len(data) != len(names):
            raise ValueError(
                f"{what}: the list of tensors that you are passing to your model is not the size the model expected. "
                f"Expected to see {len(names)} tensor(s), but instead got {len(data)}"
            )
        values = list(data)
    elif isinstance(data, list | tuple) and len(data) == 1 and isinstance(data[0], Tensor | np.ndarray):
        values = [data[0]]
    else:
        if len(names) > 1:
            raise ValueError(f"{what}: the model expects {len(names)} tensors, but only received one")
        values = [data]
    arrays = [as_tensor(v, dtypes[i], f"{what} ({names[i]})", made) for i, v in enumerate(values)]
    for name, shape, array in zip(names, shapes or [None] * len(names), arrays, strict=True):
        if shape is None:
            continue
        if array.rank != len(shape):
            raise ValueError(
                f"{what}: expected {name} to have {len(shape)} dimension(s), but got array with shape "
                f"{list(array.shape)}"
            )
        for j, (ref, dim) in enumerate(zip(shape, array.shape, strict=True)):
            if (j == 0 and not check_batch_axis) or ref is None or ref < 0:
                continue
            if ref != dim:
                raise ValueError(
                    f"{what}: expected {name} to have shape {shape_str(shape)} (each example of shape "
                    f"{shape_str(list(shape[1:]))}), but got array with shape {list(array.shape)}"
                )
    return arrays


def check_array_lengths(inputs: Sequence[Tensor], targets: Sequence[Tensor], op: str) -> None:
    """Raise unless every input and every target has the same number of samples."""
    xs = sorted({x.shape[0] for x in inputs})
    ys = sorted({y.shape[0] for y in targets})
    if len(xs) > 1:
        raise ValueError(
            f"{op}: all input tensors (x) should have the same number of samples, got shapes "
            f"{[list(x.shape) for x in inputs]}"
        )
    if len(ys) > 1:
        raise ValueError(
            f"{op}: all target tensors (y) should have the same number of samples, got shapes "
            f"{[list(y.shape) for y in targets]}"
        )
    if xs and ys and xs != ys:
        raise ValueError(
            f"{op}: x and y should have the same number of samples, found {xs[0]} input sample(s) and "
            f"{ys[0]} target sample(s)"
        )


def check_loss_and_target_compatibility(
    targets: Sequence[Tensor], loss_fns: Sequence[Any], output_shapes: Sequence[Any], op: str
) -> None:
    """Raise if a target's shape cannot go with its output's loss (TF.js's checks)."""
    key_losses = (losses.mean_squared_error, losses.binary_crossentropy, losses.categorical_crossentropy)
    for y, loss, shape in zip(targets, loss_fns, output_shapes, strict=True):
        if loss is None:
            continue
        if loss is losses.categorical_crossentropy and y.shape[-1] == 1:
            raise ValueError(
                f"{op}: you are passing a target array of shape {list(y.shape)} while using the loss "
                "'categoricalCrossentropy', which expects targets to be binary matrices (1s and 0s) of shape "
                "[samples, classes]; use 'sparseCategoricalCrossentropy' for class indices"
            )
        if any(loss is k for k in key_losses):
            for target_dim, out_dim in zip(y.shape[1:], shape[1:], strict=False):
                if out_dim is not None and target_dim != out_dim:
                    raise ValueError(
                        f"{op}: a target tensor with shape {list(y.shape)} was passed for an output of shape "
                        f"{shape_str(shape)}, while using a loss function that expects targets to have the same "
                        "shape as the output"
                    )


def standardize_sample_or_class_weights(weights: Any, output_names: Sequence[str], what: str) -> list[Any]:
    """One entry (or None) per output from a single value, a list, or a dict keyed by output name."""
    n = len(output_names)
    if weights is None or (isinstance(weights, list | tuple) and len(weights) == 0):
        return [None] * n
    if n == 1:
        if isinstance(weights, list | tuple) and len(weights) == 1 and what == "class_weight":
            return list(weights)
        if isinstance(weights, dict) and output_names[0] in weights:
            return [weights[output_names[0]]]
        return [weights]
    if isinstance(weights, list | tuple):
        if len(weights) != n:
            raise ValueError(
                f"{what} is a list of {len(weights)} element(s), but the model has {n} outputs; provide a set of "
                "weights for each model output"
            )
        return list(weights)
    if isinstance(weights, dict) and all(k in output_names for k in weights):
        return [weights.get(name) for name in output_names]
    raise ValueError(
        f"The model has multiple ({n}) outputs, so {what} must be either a list with {n} elements or a dict "
        f"with {list(output_names)} keys; got {weights!r}"
    )


def class_indices(y: Tensor) -> np.ndarray:
    """The class of each sample: ``y`` itself (rank 1 or [n, 1]) or the argmax of a one-hot ``y``."""
    values = np.asarray(y.data_sync()).reshape(y.shape)
    if y.rank == 1:
        return values.astype(np.int64)
    if y.rank == 2:
        if y.shape[1] > 1:
            return np.argmax(values, axis=1)
        if y.shape[1] == 1:
            return values.reshape(-1).astype(np.int64)
        raise ValueError(
            f"Encountered unexpected last-dimension size ({y.shape[1]}) during handling of class weights. "
            "The size is expected to be >= 1."
        )
    raise ValueError(
        f"Unexpected rank of target (y) tensor ({y.rank}) during handling of class weights. The rank is expected "
        "to be 1 or 2."
    )


def standardize_weights(y: Tensor, sample_weight: Any = None, class_weight: Any = None) -> Tensor | None:
    """Per-sample loss weights from ``class_weight`` (class -> weight) and/or ``sample_weight`` ([samples])."""
    weights: np.ndarray | None = None
    if class_weight is not None:
        if not isinstance(class_weight, dict):
            raise TypeError(f"class_weight must be a dict of class index -> weight, got {type(class_weight).__name__}")
        table = {int(k): float(v) for k, v in class_weight.items()}
        out = []
        for index in class_indices(y).tolist():
            if index not in table:
                raise ValueError(
                    f"class_weight must contain all classes in the training data. The class {index} exists in the "
                    "data but not in class_weight"
                )
            out.append(table[index])
        weights = np.asarray(out, np.float32)
    if sample_weight is not None:
        values = sample_weight.data_sync() if isinstance(sample_weight, Tensor) else sample_weight
        sw = np.asarray(values, np.float32).reshape(-1)
        if sw.shape[0] != y.shape[0]:
            raise ValueError(f"sample_weight has {sw.shape[0]} entries but there are {y.shape[0]} samples")
        weights = sw if weights is None else weights * sw
    return None if weights is None else make_tensor(weights, dtype="float32")


def compute_weighted_loss(loss: Tensor, sample_weights: Tensor) -> Tensor:
    """Per-sample ``loss`` times its weight (weights broadcast over any further axes)."""
    if loss.rank > 1:
        sample_weights = ops.reshape(sample_weights, [sample_weights.shape[0]] + [1] * (loss.rank - 1))
    return ops.mul(loss, sample_weights)


def dispose_made(made: Sequence[Tensor]) -> None:
    """Free the tensors made while standardizing data."""
    for t in made:
        if not t.is_disposed:
            t.dispose()


def split_at(num_samples: int, validation_split: float) -> int:
    """Where ``validation_split`` cuts the samples: the first ``floor(n * (1 - split))`` train."""
    return math.floor(num_samples * (1 - validation_split))


__all__ = [
    "as_tensor", "check_array_lengths", "check_batch_size", "check_loss_and_target_compatibility", "class_indices",
    "compute_weighted_loss", "dispose_made", "epoch_batches", "make_batches", "split_at", "standardize_input_data",
    "standardize_sample_or_class_weights", "standardize_weights",
]  # fmt: skip


def weights_lock(model: Any) -> Any:
    """The model's re-entrant lock between an optimizer step and predictions: a predict in another thread sees
    the weights before or after a step, never a variable whose old buffer the step has just freed
    (docs/threads.md). Made on first use (``dict.setdefault`` is atomic)."""
    return model.__dict__.setdefault("_weights_lock", threading.RLock())
