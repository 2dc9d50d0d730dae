"""Alea: the seeded pseudo-random generator of the ``seedrandom`` JS library, bit-exact.

TF.js seeds its random operations with ``seedrandom.alea(seed)`` (tfjs-data's ``shuffle`` among them), so
this module is the ONE place ndflow implements that generator: every seeded random op that must match TF.js
element for element (dataset shuffling now, others as they come) builds an :class:`Alea` from here.

The algorithm is Johannes Baagøe's Alea with its "Mash" seed hash. Everything is computed in IEEE doubles as
JavaScript does, with JS's ``>>> 0`` (unsigned 32-bit) and ``| 0`` (signed 32-bit) conversions written out, so
the numbers are identical to the JS library's for the same seed. The seed is hashed as a string, as JS's
``String(seed)`` would write it: pass a string for exact control; ints and floats are converted the JS way for
the usual cases (integers, and floats whose shortest repr has no exponent).
"""

from __future__ import annotations

import math

__all__ = ["Alea", "alea", "js_seed_string"]

_TWO_POW_32 = 4294967296.0
_TWO_POW_NEG_32 = 2.3283064365386963e-10
_TWO_POW_NEG_53 = 1.1102230246251565e-16


def _to_uint32(x: float) -> int:
    """JS's ``x >>> 0`` for a finite double."""
    return int(math.trunc(x)) % 0x100000000


def _to_int32(x: float) -> int:
    """JS's ``x | 0`` for a finite double."""
    n = int(math.trunc(x)) % 0x100000000
    return n - 0x100000000 if n >= 0x80000000 else n


def js_seed_string(seed: object) -> str:
    """``String(seed)`` as JavaScript writes it, for the seeds ndflow passes (str, int, integral float, bool)."""
    if isinstance(seed, str):
        return seed
    if isinstance(seed, bool):
        return "true" if seed else "false"
    if isinstance(seed, int):
        return str(seed)
    if isinstance(seed, float):
        if math.isnan(seed):
            return "NaN"
        if math.isinf(seed):
            return "Infinity" if seed > 0 else "-Infinity"
        if seed.is_integer() and abs(seed) < 1e21:
            return str(int(seed))
        text = repr(seed)
        if "e" not in text:
            return text
    raise TypeError(f"alea: seed must be a str, int or float (as JS would write it), got {seed!r}")


class _Mash:
    """Baagøe's string hash; its state carries over between calls, as the seeding needs."""

    def __init__(self) -> None:
        self.n = float(0xEFC8249D)

    def __call__(self, data: str) -> float:
        n = self.n
        raw = data.encode("utf-16-le", "surrogatepass")
        for i in range(0, len(raw), 2):  # UTF-16 code units, as JS's charCodeAt
            n += raw[i] | (raw[i + 1] << 8)
            h = 0.02519603282416938 * n
            n = float(_to_uint32(h))
            h -= n
            h *= n
            n = float(_to_uint32(h))
            h -= n
            n += h * _TWO_POW_32
        self.n = n
        return _to_uint32(n) * _TWO_POW_NEG_32


class Alea:
    """The Alea generator for ``seed`` (hashed as a string): ``random()`` in [0, 1) as ``seedrandom.alea(seed)()``,
    plus the library's ``int32()``, ``double()`` and ``quick()``."""

    __slots__ = ("c", "s0", "s1", "s2")

    def __init__(self, seed: object) -> None:
        text = js_seed_string(seed)
        mash = _Mash()
        self.c = 1
        self.s0 = mash(" ")
        self.s1 = mash(" ")
        self.s2 = mash(" ")
        self.s0 -= mash(text)
        if self.s0 < 0:
            self.s0 += 1
        self.s1 -= mash(text)
        if self.s1 < 0:
            self.s1 += 1
        self.s2 -= mash(text)
        if self.s2 < 0:
            self.s2 += 1

    def random(self) -> float:
        """The next double in [0, 1) with 32 bits of randomness (the library's ``prng()``)."""
        t = 2091639 * self.s0 + self.c * _TWO_POW_NEG_32
        self.s0 = self.s1
        self.s1 = self.s2
        self.c = _to_int32(t)
        self.s2 = t - self.c
        return self.s2

    __call__ = random
    quick = random

    def int32(self) -> int:
        """The next signed 32-bit integer (``prng.int32()``)."""
        return _to_int32(self.random() * _TWO_POW_32)

    def double(self) -> float:
        """The next double in [0, 1) with 53 bits of randomness (``prng.double()``)."""
        high = self.random()
        return high + _to_int32(self.random() * 0x200000) * _TWO_POW_NEG_53

    def state(self) -> dict[str, float]:
        """The generator's state (``prng.state()``), to restore with :meth:`from_state`."""
        return {"c": self.c, "s0": self.s0, "s1": self.s1, "s2": self.s2}

    @classmethod
    def from_state(cls, state: dict[str, float]) -> Alea:
        """A generator that continues from ``state`` (as ``seedrandom.alea('', {state})``)."""
        gen = cls.__new__(cls)
        gen.c, gen.s0, gen.s1, gen.s2 = state["c"], state["s0"], state["s1"], state["s2"]
        return gen


def alea(seed: object) -> Alea:
    """``seedrandom.alea(seed)``: a new :class:`Alea` generator."""
    return Alea(seed)
