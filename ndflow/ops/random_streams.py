"""TF.js's seeded random streams, value for value: seeds, uniform, Marsaglia-polar normal and gamma draws.

TF.js (tfjs-core ``ops/rand_util``) draws every random value in the op, in JavaScript doubles, from
seedrandom's Alea generator (:mod:`ndflow.core.alea`, the one implementation ndflow has) and stores it into a
typed array of the result's dtype. This module reproduces that arithmetic step by step:

* the seed becomes the generator's seed string as JavaScript's ``toString`` writes it (:func:`js_number_string`);
  where TF.js has no seed (or, for the normal and gamma draws, a falsy one: ``0``, ``''``) it takes
  ``Math.random()``, and so do we (any values are then fine);
* uniform: ``min + (max - min) * u``; normal: the Marsaglia polar method, two values per accepted pair, the
  second kept for the next call (the truncated form redraws a pair whose first value is beyond two standard
  deviations and drops a second value that is); gamma: Marsaglia and Tsang with its own normal stream, seeded
  by the first uniform draw;
* the stores: ``Float32Array`` rounds to nearest, ``Int32Array`` truncates modulo 2**32, ``Uint8Array`` (bool)
  truncates modulo 256, and the int32 normal and gamma values are first rounded as ``Math.round`` does.

The Alea steps run on integers here (each state word is a multiple of 2**-32, so the JS doubles are exact
integers scaled), which gives the same numbers as :class:`~ndflow.core.alea.Alea` at a fraction of the cost.
"""

from __future__ import annotations

import math

import numpy as np

from ..core.alea import Alea
from ..core.dispatch.run_kernel import RANDOM
from ..core.engine import ENGINE

# not a family of public ops: ``ndflow.ops`` re-exports every module's ``__all__`` at the top level
__all__: list[str] = []

Seed = int | float | str | None

_ENTROPY = np.random.default_rng()  # TF.js's Math.random() where it has no seed
_TWO_32 = 4294967296.0
_MASK = 0xFFFFFFFF


def js_number_string(value: float) -> str:
    """``Number.prototype.toString()`` for a JavaScript number: shortest round-trip digits, JS's layout."""
    value = float(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "0"  # -0 too
    sign = "-" if value < 0 else ""
    from decimal import Decimal  # here: decimal is milliseconds of ``import ndflow``

    _, digit_tuple, exponent = Decimal(repr(abs(value))).normalize().as_tuple()
    digits = "".join(map(str, digit_tuple))
    k = len(digits)
    n = int(exponent) + k  # value = 0.digits * 10**n
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        text = "0." + "0" * -n + digits
    else:
        e = n - 1
        mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
        text = f"{mantissa}e{'+' if e >= 0 else '-'}{abs(e)}"
    return sign + text


def seed_text(seed: Seed, op: str, falsy_is_unseeded: bool) -> str:
    """The string TF.js hands to ``seedrandom.alea`` for ``seed``.

    Numbers are written as JavaScript writes them (a Python int becomes the JS number, a double, first).
    ``falsy_is_unseeded``: the normal, gamma and multinomial draws test the seed's truthiness, so ``0``, ``NaN``
    and ``''`` draw unseeded values there; the uniform draw only treats a missing seed so.
    """
    if ENGINE._calls is not None:  # a recorded computation draws new numbers here on every run: not replayable
        ENGINE.list_event(RANDOM)
    if seed is not None and (
        isinstance(seed, bool) or not isinstance(seed, int | float | str | np.integer | np.floating)
    ):
        raise TypeError(f"{op}: argument 'seed' must be an int, float or str, got {type(seed).__name__}")
    if isinstance(seed, int | np.integer | np.floating):  # the JS number a ported literal holds
        try:
            seed = float(seed)
        except OverflowError:  # an int beyond the doubles
            seed = math.inf if seed > 0 else -math.inf
    if seed is None or (falsy_is_unseeded and (not seed or (isinstance(seed, float) and math.isnan(seed)))):
        seed = float(_ENTROPY.random())
    return seed if isinstance(seed, str) else js_number_string(float(seed))


class UniformStream:
    """``seedrandom.alea(text)`` drawn in blocks: the same doubles in [0, 1), in the same order."""

    __slots__ = ("_c", "_s0", "_s1", "_s2")

    def __init__(self, text: str) -> None:
        gen = Alea(text)
        self._c = int(gen.c)
        self._s0, self._s1, self._s2 = (int(s * _TWO_32) for s in (gen.s0, gen.s1, gen.s2))

    def take(self, n: int) -> np.ndarray:
        """The next ``n`` draws (float64)."""
        out: list[int] = []
        add = out.append
        c, s0, s1, s2 = self._c, self._s0, self._s1, self._s2
        for _ in range(n // 3):  # three steps turn the lag-3 state over once: no shuffling of the words
            x = 2091639 * s0 + c  # the JS double t = 2091639 * s0 + c * 2**-32, scaled by 2**32 (exact)
            c = x >> 32
            s0 = x & _MASK
            add(s0)
            x = 2091639 * s1 + c
            c = x >> 32
            s1 = x & _MASK
            add(s1)
            x = 2091639 * s2 + c
            c = x >> 32
            s2 = x & _MASK
            add(s2)
        for _ in range(n % 3):
            x = 2091639 * s0 + c
            c = x >> 32
            s0, s1, s2 = s1, s2, x & _MASK
            add(s2)
        self._c, self._s0, self._s1, self._s2 = c, s0, s1, s2
        return np.array(out, np.int64) / _TWO_32

    def next(self) -> float:
        """One draw."""
        x = 2091639 * self._s0 + self._c
        self._c = x >> 32
        self._s0, self._s1, self._s2 = self._s1, self._s2, x & _MASK
        return self._s2 / _TWO_32


def js_round(x: np.ndarray) -> np.ndarray:
    """``Math.round``: to the nearest integer, halves towards +infinity (exact: ``x - floor(x)`` is)."""
    with np.errstate(invalid="ignore"):
        r = np.floor(x)
        return r + (x - r >= 0.5)


def store(values: np.ndarray, dtype: str) -> np.ndarray:
    """Doubles written into TF.js's typed array for ``dtype``: Float32Array, Int32Array or Uint8Array (bool)."""
    if dtype == "float32":
        return values.astype(np.float32)
    with np.errstate(invalid="ignore"):
        t = np.where(np.isfinite(values), np.trunc(values), 0.0)
    if dtype == "int32":
        return (np.mod(t, _TWO_32).astype(np.int64) & _MASK).astype(np.uint32).view(np.int32)
    return np.mod(t, 256.0) != 0  # bool: the byte TF.js stores, read as true when non-zero


class GaussStream:
    """TF.js's ``MPRandGauss``: normal draws by the Marsaglia polar method (``Math.round``ed for int32).

    Its values are the concatenation, pair by pair, of each accepted pair's first value and (when kept) its
    second: TF.js hands the second out on the next call. Pairs are drawn in blocks and the values not yet
    handed out wait in a buffer, so the stream continues exactly where TF.js's would.
    """

    def __init__(self, mean: float, std: float, as_int: bool, truncated: bool, text: str) -> None:
        self.mean, self.std, self.as_int, self.truncated = mean, std, as_int, truncated
        self.upper, self.lower = mean + std * 2, mean - std * 2
        self.random = UniformStream(text)
        self._buffer = np.empty(0, np.float64)  # values computed but not handed out yet
        self._pos = 0

    def _pairs(self, count: int) -> np.ndarray:
        """The values of the next ``count`` pairs of draws, in order (rejected pairs and values left out)."""
        v = 2 * self.random.take(2 * count).reshape(count, 2) - 1
        s = v[:, 0] * v[:, 0] + v[:, 1] * v[:, 1]
        ok = (s < 1) & (s != 0)
        v, s = v[ok], s[ok]
        log = math.log  # the C library's log (correctly rounded in practice), closest to JS's Math.log
        mul = np.sqrt(-2.0 * np.array([log(x) for x in s.tolist()], np.float64) / s)
        with np.errstate(invalid="ignore", over="ignore"):
            xy = self.mean + self.std * v * mul[:, None]  # mean + ((std * v) * mul), as TF.js
        if self.truncated:
            valid = (xy <= self.upper) & (xy >= self.lower)
            keep = np.stack([valid[:, 0], valid[:, 0] & valid[:, 1]], axis=1)
        else:
            keep = np.ones(xy.shape, bool)
        if self.as_int:
            xy = js_round(xy)
        keep[:, 1] &= ~np.isnan(xy[:, 1])  # a NaN second value reads as "none kept"
        return xy[keep]

    def take(self, n: int) -> np.ndarray:
        """The next ``n`` values (float64, before the dtype's store)."""
        parts, have = [], 0
        while have < n:
            if self._pos == self._buffer.size:
                # ~21% of pairs are rejected (and, truncated, ~9% of the rest and ~5% of second values)
                self._buffer, self._pos = self._pairs(int((n - have) * (0.75 if self.truncated else 0.64)) + 16), 0
            k = min(n - have, self._buffer.size - self._pos)
            parts.append(self._buffer[self._pos : self._pos + k])
            self._pos += k
            have += k
        return np.concatenate(parts) if parts else np.empty(0, np.float64)

    def next(self) -> float:
        """The next value."""
        while self._pos == self._buffer.size:
            self._buffer, self._pos = self._pairs(64), 0
        self._pos += 1
        return float(self._buffer[self._pos - 1])


def gamma_values(n: int, alpha: float, beta: float, as_int: bool, text: str) -> np.ndarray:
    """TF.js's ``RandGamma`` (Marsaglia and Tsang): ``n`` draws with shape ``alpha``, multiplied by ``beta``
    (TF.js calls it the rate, keeps ``1 / beta`` and multiplies by the reciprocal of that)."""
    randu = UniformStream(text)
    first = randu.next()
    randn = GaussStream(0.0, 1.0, as_int, False, js_number_string(first) if first else str(_ENTROPY.random()))
    scale = 1 / beta
    d = alpha + 2 / 3 if alpha < 1 else alpha - 1 / 3
    c = 1 / math.sqrt(9 * d)
    factor = (1 / scale) * d
    out = np.empty(n, np.float64)
    log = math.log
    for i in range(n):
        while True:
            while True:
                x = randn.next()
                v = 1 + c * x
                if v > 0:
                    break
            v *= v * v
            x2 = x * x
            v0 = 1 - 0.331 * x2 * x2
            v1 = 0.5 * x2 + d * (1 - v + log(v))
            u = randu.next()
            if u < v0 or (u > 0 and log(u) < v1) or (u == 0 and -math.inf < v1):
                break
        v = factor * v
        if alpha < 1:
            v *= randu.next() ** (1 / alpha)
        out[i] = v
    return js_round(out) if as_int else out
