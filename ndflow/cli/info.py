"""``ndflow info``: the version of ndflow and of the packages it can use, the backends (kernel counts, which one
is active) and the flags."""

from __future__ import annotations


def _versions() -> list[str]:
    import importlib.metadata as md
    import platform

    out = [f"python {platform.python_version()}"]
    for package in ("numpy", "torch", "wgpu", "tqdm"):
        try:
            out.append(f"{package} {md.version(package)}")
        except md.PackageNotFoundError:
            pass
    return out


def run_info() -> int:
    """Print the version, the backends (highest priority first) and the flags; exit status 0."""
    import ndflow as nf

    print(f"ndflow {nf.__version__}")
    print(f"with {', '.join(_versions())}")
    active = nf.get_backend()
    from ndflow.backends import coverage

    print("backends (highest priority first):")
    for name, kernels in coverage().items():
        mark = " (active)" if name == active else ""
        backend = nf.find_backend(name)
        where = getattr(backend, "description", None) if backend is not None else "failed to initialize"
        detail = f", {where()}" if callable(where) else (f", {where}" if where else "")
        print(f"  {name}{mark}: {len(kernels)} kernels{detail}")
    print("flags:")
    for name, value in nf.env().features().items():
        print(f"  {name} = {value}")
    return 0
