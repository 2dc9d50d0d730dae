"""A one-line description of the machine a benchmark ran on (for tables in docs/performance.md)."""

from __future__ import annotations

import importlib.metadata as md
import os
import platform
from pathlib import Path


def cpu_name() -> str:
    """The CPU's model name from /proc/cpuinfo (the platform's processor string elsewhere)."""
    info = Path("/proc/cpuinfo")
    if info.exists():
        for line in info.read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def describe() -> str:
    """CPU, core count, Python, numpy and torch versions (torch only where installed)."""
    parts = [f"{cpu_name()} ({platform.machine()}), {os.cpu_count()} cores", f"Python {platform.python_version()}"]
    for package in ("numpy", "torch"):
        try:
            parts.append(f"{package} {md.version(package)}")
        except md.PackageNotFoundError:
            pass
    return ", ".join(parts)


def load() -> str:
    """The 1-minute load average over the core count (other work competing for the cores), where known."""
    try:
        return f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    except (AttributeError, OSError):
        return "load average unknown"


if __name__ == "__main__":
    print(describe())
    print(load())
