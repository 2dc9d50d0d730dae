"""Weight initializers by TF.js name: ``zeros``, ``glorot_uniform``, ``variance_scaling``, ...

Factories (``nf.initializers.glorot_uniform(seed=1)``) and classes (``GlorotUniform``) as in
TF.js; ``get_initializer`` also takes TF.js's string identifiers in camelCase or snake_case
(``'glorotUniform'``, ``'glorot_uniform'``) or a Keras config dict. A seeded initializer gives TF.js's
own weights for that seed, value for value: it hands the seed to the same op as TF.js's initializer
(``random_uniform``, ``random_normal`` or ``truncated_normal``), so, as in TF.js, a seed of ``0`` draws
unseeded normal values. Beyond TF.js: ``RandomUniform`` / ``RandomNormal`` / ``TruncatedNormal`` keep an
explicit ``0`` (TF.js replaces a zero ``minval``, ``mean`` or ``stddev`` by the default), and
``VarianceScaling(distribution='truncated_normal')`` draws Keras's corrected truncated normal (TF.js draws
uniform values there). ``Orthogonal``'s normal draws are TF.js's; its QR factor is ndflow's, equal to
about 1e-7.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import Any

from .. import ops
from ..core.dtypes import check_dtype
from ..core.globals import tidy
from ..core.tensor import Tensor
from ..ops import linalg
from .engine.tfjs_args import tfjs_config
from .naming import to_camel_case
from .serialization import Serializable, deserialize_keras_object, register_class, serialize_keras_object
from .utils import check_string_arg

logger = logging.getLogger("ndflow")

FAN_MODES = ("fanIn", "fanOut", "fanAvg")
DISTRIBUTIONS = ("normal", "uniform", "truncatedNormal")


class Initializer(Serializable):
    """Base class of initializers: ``apply(shape, dtype)`` returns a new tensor."""

    class_name = "Initializer"

    def apply(self, shape: Sequence[int], dtype: str | None = None) -> Tensor:
        """A tensor of ``shape`` and ``dtype`` (float32 by default)."""
        raise NotImplementedError

    def __call__(self, shape: Sequence[int], dtype: str | None = None) -> Tensor:
        return self.apply(shape, dtype)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.get_config()})"


def _float_dtype(dtype: str | None, who: str) -> str:
    dtype = check_dtype(dtype, who) if dtype else "float32"
    if dtype not in ("float32", "int32"):
        raise NotImplementedError(f"{who} does not support dtype {dtype}")
    return dtype


@register_class
class Zeros(Initializer):
    """All zeros."""

    def apply(self, shape: Sequence[int], dtype: str | None = None) -> Tensor:
        """Zeros of ``shape``."""
        return ops.zeros(list(shape), dtype or "float32")


@register_class
class Ones(Initializer):
    """All ones."""

    def apply(self, shape: Sequence[int], dtype: str | None = None) -> Tensor:
        """Ones of ``shape``."""
        return ops.ones(list(shape), dtype or "float32")


@register_class
class Constant(Initializer):
    """Every element set to ``value``."""

    def __init__(self, value: float) -> None:
        self.value = value

    def apply(self, shape: Sequence[int], dtype: str | None = None) -> Tensor:
        """``value`` everywhere."""
        return tidy(lambda: ops.mul(ops.scalar(self.value), ops.ones(list(shape), dtype or "float32")))

    def get_config(self) -> dict[str, Any]:
        """The Keras-format (snake_case) config."""
        return {"value": self.value}


@register_class
class RandomUniform(Initializer):
    """Uniform in [minval, maxval)."""

    def __init__(self, minval: float | None = None, maxval: float | None = None, seed: int | None = None) -> None:
        self.minval = -0.05 if minval is None else minval
        self.maxval = 0.05 if maxval is None else maxval
        self.seed = seed

    def apply(self, shape: Sequence[int], dtype: str | None = None) -> Tensor:
        """Uniform samples."""
        return ops.random_uniform(list(shape), self.minval, self.maxval, dtype or "float32", self.seed)

    def get_config(self) -> dict[str, Any]:
        """The Keras-format (snake_case) config."""
        return {"minval": self.minval, "maxval": self.maxval, "seed": self.seed}


@register_class
class RandomNormal(Initializer):
    """Normal with ``mean`` and ``stddev``."""

    def __init__(self, mean: float | None = None, stddev: float | None = None, seed: int | None = None) -> None:
        self.mean = 0.0 if mean is None else mean
        self.stddev = 0.05 if stddev is None else stddev
        self.seed = seed

    def apply(self, shape: Sequence[int], dtype: str | None = None) -> Tensor:
        """Normal samples."""
        dtype = _float_dtype(dtype, "random_normal")
        return ops.random_normal(list(shape), self.mean, self.stddev, dtype, self.seed)

    def get_config(self) -> dict[str, Any]:
        """The Keras-format (snake_case) config."""
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


@register_class
class TruncatedNormal(Initializer):
    """Normal with ``mean`` and ``stddev``, redrawn beyond two standard deviations."""

    def __init__(self, mean: float | None = None, stddev: float | None = None, seed: int | None = None) -> None:
        self.mean = 0.0 if mean is None else mean
        self.stddev = 0.05 if stddev is None else stddev
        self.seed = seed

    def apply(self, shape: Sequence[int], dtype: str | None = None) -> Tensor:
        """Truncated normal samples."""
        dtype = _float_dtype(dtype, "truncated_normal")
        return ops.truncated_normal(list(shape), self.mean, self.stddev, dtype, self.seed)

    def get_config(self) -> dict[str, Any]:
        """The Keras-format (snake_case) config."""
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


@register_class
class Identity(Initializer):
    """``gain`` times the identity matrix (2-D square shapes only)."""

    def __init__(self, gain: float | None = None) -> None:
        self.gain = 1.0 if gain is None else gain

    def apply(self, shape: Sequence[int], dtype: str | None = None) -> Tensor:
        """``gain * eye(n)``."""
        shape = list(shape)
        if len(shape) != 2 or shape[0] != shape[1]:
            raise ValueError(f"Identity initializer can only be used for 2D square matrices, got shape {shape}")
        return tidy(lambda: ops.mul(self.gain, ops.eye(shape[0])))

    def get_config(self) -> dict[str, Any]:
        """The Keras-format (snake_case) config."""
        return {"gain": self.gain}


def compute_fans(shape: Sequence[int], data_format: str = "channels_last") -> tuple[float, float]:
    """(fan_in, fan_out) of a weight shape, as Keras computes them."""
    shape = list(shape)
    if len(shape) == 2:
        return shape[0], shape[1]
    if len(shape) in (3, 4, 5):
        if to_camel_case(data_format) == "channelsFirst":
            receptive = math.prod(shape[2:])
            return shape[1] * receptive, shape[0] * receptive
        receptive = math.prod(shape[:-2])
        return shape[-2] * receptive, shape[-1] * receptive
    size = math.prod(shape)
    return math.sqrt(size), math.sqrt(size)


@register_class
class VarianceScaling(Initializer):
    """Samples scaled to the fan-in / fan-out of the weight (the base of glorot, he, lecun)."""

    def __init__(
        self, scale: float = 1.0, mode: str = "fan_in", distribution: str = "normal", seed: int | None = None
    ) -> None:
        scale = 1.0 if scale is None else scale
        if scale < 0:
            raise ValueError(f"VarianceScaling: scale must be a positive float, got {scale}")
        self.scale = scale
        self.mode = check_string_arg(mode or "fanIn", FAN_MODES, "mode", "VarianceScaling")
        self.distribution = check_string_arg(distribution or "normal", DISTRIBUTIONS, "distribution", "VarianceScaling")
        self.seed = seed

    def apply(self, shape: Sequence[int], dtype: str | None = None) -> Tensor:
        """Samples with variance ``scale / fan``."""
        fan_in, fan_out = compute_fans(shape)
        if self.mode == "fan_in":
            scale = self.scale / max(1, fan_in)
        elif self.mode == "fan_out":
            scale = self.scale / max(1, fan_out)
        else:
            scale = self.scale / max(1, (fan_in + fan_out) / 2)
        if self.distribution == "uniform":
            limit = math.sqrt(3 * scale)
            return ops.random_uniform(list(shape), -limit, limit, dtype or "float32", self.seed)
        dtype = _float_dtype(dtype, self.get_class_name())
        stddev = math.sqrt(scale)
        if self.distribution == "truncated_normal":  # Keras's; TF.js draws uniform samples here
            stddev /= 0.87962566103423978  # the stddev of a unit normal truncated to [-2, 2]
        return ops.truncated_normal(list(shape), 0, stddev, dtype, self.seed)

    def get_config(self) -> dict[str, Any]:
        """The Keras-format (snake_case) config."""
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution, "seed": self.seed}


class _Preset(VarianceScaling):
    """A VarianceScaling preset; serialized as ``VarianceScaling`` (as TF.js does)."""

    preset: tuple[float, str, str] = (1.0, "fan_in", "normal")

    def __init__(self, seed: int | None = None) -> None:
        scale, mode, distribution = self.preset
        super().__init__(scale=scale, mode=mode, distribution=distribution, seed=seed)

    def get_class_name(self) -> str:
        """The class name written in configs."""
        return VarianceScaling.class_name

    @classmethod
    def from_config(cls, config: dict[str, Any], custom_objects: dict[str, Any] | None = None) -> Any:
        """An instance from its Keras-format config."""
        return cls(seed=config.get("seed"))


@register_class
class GlorotUniform(_Preset):
    """Uniform with limit sqrt(6 / (fan_in + fan_out))."""

    preset = (1.0, "fan_avg", "uniform")


@register_class
class GlorotNormal(_Preset):
    """Truncated normal with stddev sqrt(2 / (fan_in + fan_out))."""

    preset = (1.0, "fan_avg", "normal")


@register_class
class HeNormal(_Preset):
    """Truncated normal with stddev sqrt(2 / fan_in)."""

    preset = (2.0, "fan_in", "normal")


@register_class
class HeUniform(_Preset):
    """Uniform with limit sqrt(6 / fan_in)."""

    preset = (2.0, "fan_in", "uniform")


@register_class
class LeCunNormal(_Preset):
    """Truncated normal with stddev sqrt(1 / fan_in)."""

    preset = (1.0, "fan_in", "normal")


@register_class
class LeCunUniform(_Preset):
    """Uniform with limit sqrt(3 / fan_in)."""

    preset = (1.0, "fan_in", "uniform")


@register_class
class Orthogonal(Initializer):
    """A random orthogonal matrix (of the QR decomposition of a normal matrix), times ``gain``."""

    ELEMENTS_WARN_SLOW = 2000

    def __init__(self, gain: float | None = None, seed: int | None = None) -> None:
        self.gain = 1.0 if gain is None else gain
        self.seed = seed

    def apply(self, shape: Sequence[int], dtype: str | None = None) -> Tensor:
        """An orthogonal matrix reshaped to ``shape``."""
        shape = list(shape)
        if len(shape) < 2:
            raise NotImplementedError(f"Orthogonal initializer: shape must be at least 2D, got {shape}")
        if dtype not in (None, "float32", "int32"):
            raise TypeError(f"Orthogonal initializer: unsupported dtype {dtype}")
        rows, cols = math.prod(shape[:-1]), shape[-1]
        if rows * cols > self.ELEMENTS_WARN_SLOW:
            logger.warning(
                "Orthogonal initializer is being called on a matrix with more than %d (%d) elements: "
                "slowness may result.",
                self.ELEMENTS_WARN_SLOW,
                rows * cols,
            )

        def run() -> Tensor:
            normal = ops.random_normal([max(rows, cols), min(rows, cols)], 0, 1, dtype or "float32", self.seed)
            q, r = linalg.qr(normal, False)
            n = min(rows, cols)
            diag = ops.strided_slice(ops.reshape(r, [-1]), [0], [n * n], [n + 1])
            q = ops.mul(q, ops.sign(diag))
            if rows < cols:
                q = ops.transpose(q)
            return ops.mul(ops.scalar(self.gain), ops.reshape(q, shape))

        return tidy(run)

    def get_config(self) -> dict[str, Any]:
        """The Keras-format (snake_case) config."""
        return {"gain": self.gain, "seed": self.seed}


#: TF.js's string identifiers of initializers and the classes they name.
INITIALIZER_IDENTIFIERS = {
    "constant": "Constant", "glorotNormal": "GlorotNormal", "glorotUniform": "GlorotUniform",
    "heNormal": "HeNormal", "heUniform": "HeUniform", "identity": "Identity", "leCunNormal": "LeCunNormal",
    "leCunUniform": "LeCunUniform", "ones": "Ones", "orthogonal": "Orthogonal", "randomNormal": "RandomNormal",
    "randomUniform": "RandomUniform", "truncatedNormal": "TruncatedNormal",
    "varianceScaling": "VarianceScaling", "zeros": "Zeros",
}  # fmt: skip
_PRESETS = {c.class_name: c for c in (GlorotNormal, GlorotUniform, HeNormal, HeUniform, LeCunNormal, LeCunUniform)}
_ALIASES = {"lecunNormal": "LeCunNormal", "lecunUniform": "LeCunUniform"}  # Keras's spelling


def get_initializer(identifier: str | dict | Initializer) -> Initializer:
    """An initializer from a name (``'glorotUniform'`` / ``'glorot_uniform'``), a config dict or an instance."""
    if isinstance(identifier, Initializer):
        return identifier
    if isinstance(identifier, str):
        camel = to_camel_case(identifier)
        class_name = INITIALIZER_IDENTIFIERS.get(camel) or _ALIASES.get(camel) or identifier
        if class_name in _PRESETS:
            return _PRESETS[class_name]()
        return deserialize_initializer({"class_name": class_name, "config": {}})
    if isinstance(identifier, dict):
        return deserialize_initializer(identifier)
    raise TypeError(f"initializer must be a name, a config dict or an Initializer, got {type(identifier).__name__}")


def deserialize_initializer(config: dict[str, Any], custom_objects: dict[str, Any] | None = None) -> Initializer:
    """An initializer from its ``{'class_name', 'config'}``."""
    result = deserialize_keras_object(config, custom_objects=custom_objects, kind="initializer")
    if not isinstance(result, Initializer):
        raise ValueError(f"{config.get('class_name')!r} is not an initializer")
    return result


def serialize_initializer(initializer: Initializer | None) -> dict[str, Any] | None:
    """``{'class_name', 'config'}`` of an initializer."""
    return serialize_keras_object(initializer)


# -- factories (tf.initializers.*) ----------------------------------------------------------------
def zeros() -> Zeros:
    """Initializer of zeros."""
    return Zeros()


def ones() -> Ones:
    """Initializer of ones."""
    return Ones()


@tfjs_config("value")
def constant(value: float) -> Constant:
    """Initializer of a constant ``value``."""
    return Constant(value)


@tfjs_config("minval")
def random_uniform(minval: float | None = None, maxval: float | None = None, seed: int | None = None) -> RandomUniform:
    """Uniform in [minval, maxval) (defaults -0.05, 0.05)."""
    return RandomUniform(minval, maxval, seed)


@tfjs_config("mean")
def random_normal(mean: float | None = None, stddev: float | None = None, seed: int | None = None) -> RandomNormal:
    """Normal (defaults mean 0, stddev 0.05)."""
    return RandomNormal(mean, stddev, seed)


@tfjs_config("mean")
def truncated_normal(
    mean: float | None = None, stddev: float | None = None, seed: int | None = None
) -> TruncatedNormal:
    """Truncated normal (defaults mean 0, stddev 0.05)."""
    return TruncatedNormal(mean, stddev, seed)


@tfjs_config("gain")
def identity(gain: float | None = None) -> Identity:
    """``gain`` times the identity matrix."""
    return Identity(gain)


@tfjs_config("scale")
def variance_scaling(
    scale: float = 1.0, mode: str = "fan_in", distribution: str = "normal", seed: int | None = None
) -> VarianceScaling:
    """Samples scaled to the fan of the weight."""
    return VarianceScaling(scale, mode, distribution, seed)


@tfjs_config("seed")
def glorot_uniform(seed: int | None = None) -> GlorotUniform:
    """Glorot (Xavier) uniform."""
    return GlorotUniform(seed)


@tfjs_config("seed")
def glorot_normal(seed: int | None = None) -> GlorotNormal:
    """Glorot (Xavier) normal."""
    return GlorotNormal(seed)


@tfjs_config("seed")
def he_normal(seed: int | None = None) -> HeNormal:
    """He normal."""
    return HeNormal(seed)


@tfjs_config("seed")
def he_uniform(seed: int | None = None) -> HeUniform:
    """He uniform."""
    return HeUniform(seed)


@tfjs_config("seed")
def le_cun_normal(seed: int | None = None) -> LeCunNormal:
    """LeCun normal."""
    return LeCunNormal(seed)


@tfjs_config("seed")
def le_cun_uniform(seed: int | None = None) -> LeCunUniform:
    """LeCun uniform."""
    return LeCunUniform(seed)


@tfjs_config("gain")
def orthogonal(gain: float | None = None, seed: int | None = None) -> Orthogonal:
    """A random orthogonal matrix times ``gain``."""
    return Orthogonal(gain, seed)


__all__ = [
    "Constant", "GlorotNormal", "GlorotUniform", "HeNormal", "HeUniform", "INITIALIZER_IDENTIFIERS", "Identity",
    "Initializer", "LeCunNormal", "LeCunUniform", "Ones", "Orthogonal", "RandomNormal", "RandomUniform",
    "TruncatedNormal", "VarianceScaling", "Zeros", "compute_fans", "constant", "deserialize_initializer",
    "get_initializer", "glorot_normal", "glorot_uniform", "he_normal", "he_uniform", "identity", "le_cun_normal",
    "le_cun_uniform", "ones", "orthogonal", "random_normal", "random_uniform", "serialize_initializer",
    "truncated_normal", "variance_scaling", "zeros",
]  # fmt: skip
