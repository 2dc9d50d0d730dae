"""Keep freed array memory in the process for the next inference (glibc's ``mallopt``; flag ``CPU_KEEP_MEMORY``).

A model's large intermediates (megabytes each) are allocated and freed on every inference. With glibc's
defaults, a block above the mmap threshold is a fresh ``mmap`` each time, and freed memory at the top of the
heap goes back to the OS once it exceeds the trim threshold; either way the next inference touches new pages,
and every 4 KiB page costs a page fault on first write (0.5-1 us). glibc raises both thresholds as it sees large
blocks freed, but the trim threshold stays at twice the largest block: a model whose freed intermediates add up
to more than that pays 600-2,700 faults per inference here (blazeface, faceres, handdetect, nanodet, posenet,
rvm among the human models), about a millisecond.

With the flag on (the default on Linux with glibc), the cpu backend sets the mmap threshold to MMAP_THRESHOLD
and the trim threshold to TRIM_THRESHOLD when it is created: memory freed by one inference serves the next.
The cost is that up to TRIM_THRESHOLD of freed memory stays with the process. Off, it restores glibc's
default thresholds (fixed, as any ``mallopt`` call leaves them).
"""

from __future__ import annotations

import ctypes
import sys
from typing import Any

#: Blocks up to this size come from the heap (glibc's own dynamic threshold stops at 32 MiB on 64-bit).
MMAP_THRESHOLD = 32 << 20

#: Free memory at the top of the heap kept up to this much before it is returned to the OS.
TRIM_THRESHOLD = 256 << 20

# glibc's parameter numbers and default values
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_DEFAULT_TRIM, _DEFAULT_MMAP = 128 << 10, 128 << 10

_state: dict[str, Any] = {"applied": None}


def _mallopt() -> Any:
    """glibc's ``mallopt``, or None (another C library, another system)."""
    if "fn" not in _state:
        _state["fn"] = None
        if sys.platform.startswith("linux"):
            try:
                libc = ctypes.CDLL(None)  # the process's own symbols: glibc's (find_library runs ldconfig)
                fn = libc.mallopt
                fn.argtypes, fn.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
                if getattr(libc, "gnu_get_libc_version", None) is not None:
                    _state["fn"] = fn
            except (OSError, AttributeError):
                pass
    return _state["fn"]


def available() -> bool:
    """Whether the thresholds can be set here (Linux with glibc)."""
    return _mallopt() is not None


def apply(keep: object) -> bool:
    """Set glibc's thresholds for ``keep`` (the flag's value): raised when true, glibc's defaults when false
    after they were raised; nothing when they already are so. Returns whether the thresholds are raised."""
    want = bool(keep)
    fn = _mallopt()
    if fn is None or _state["applied"] is want or (not want and _state["applied"] is None):
        return bool(_state["applied"]) if fn is not None else False
    trim, mmap = (TRIM_THRESHOLD, MMAP_THRESHOLD) if want else (_DEFAULT_TRIM, _DEFAULT_MMAP)
    fn(_M_MMAP_THRESHOLD, mmap)
    fn(_M_TRIM_THRESHOLD, trim)
    _state["applied"] = want
    return want


def status() -> str:
    """Whether freed memory is kept, for ``ndflow info``-style reports."""
    if not available():
        return "off (not glibc)"
    return "on" if _state["applied"] else "off"
