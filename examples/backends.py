#!/usr/bin/env python3
"""The platform guide's backends: list them, switch with ``set_backend``, watch tensors move lazily.

Every registered backend (cpu always; webgpu and torch when their libraries are installed) runs
the same op. A tensor made on one backend stays there until an op on another backend uses it;
then its data moves once, for every tensor sharing it. To show the move where only the cpu
backend exists, the example registers a second cpu backend ("cpu-b") with the same kernels.

    python examples/backends.py
"""

from __future__ import annotations

import ndflow as nf
from ndflow.backends.cpu import CPUBackend


class SecondCPU(CPUBackend):
    """A second numpy backend, so that tensors have somewhere to move to."""

    name = "cpu-b"


def list_backends() -> list[str]:
    """Print the registered backends, highest priority first, and which one is active."""
    names = nf.engine().backend_names()
    active = nf.get_backend()
    print("registered backends (highest priority first):")
    for name in names:
        print(f"  {name}{' (active)' if name == active else ''}")
    return names


def run_on_each(names: list[str]) -> None:
    """The same op on every backend that initializes."""
    previous = nf.get_backend()
    for name in names:
        if not nf.set_backend(name):
            print(f"{name}: failed to initialize, skipped")
            continue
        y = nf.tidy(lambda: nf.sum(nf.square(nf.tensor([1.0, 2.0, 3.0]))))
        print(f"{name}: sum(square([1, 2, 3])) = {y.data_sync()[0]} (computed on '{y.backend_name}')")
        y.dispose()
    nf.set_backend(previous)


def lazy_move(source: str, target: str) -> None:
    """A tensor made on ``source`` moves to ``target`` only when an op there uses it."""
    nf.set_backend(source)
    a = nf.tensor([1.0, 2.0, 3.0])
    print(f"a made on '{a.backend_name}'")
    nf.set_backend(target)
    print(f"after set_backend('{target}'): a is still on '{a.backend_name}' (nothing moved yet)")
    b = nf.add(a, 1)
    print(f"after b = a + 1: a is on '{a.backend_name}', b on '{b.backend_name}', b = {b.data_sync().tolist()}")
    nf.set_backend(source)
    print(f"back on '{source}': a stays on '{a.backend_name}' until used here")
    nf.dispose([a, b])


def main() -> None:
    """Command line."""
    names = list_backends()
    default = nf.get_backend()
    run_on_each(names)
    nf.register_backend("cpu-b", SecondCPU, priority=0)
    nf.copy_registered_kernels("cpu", "cpu-b")
    try:
        print("== lazy moves ==")
        lazy_move("cpu", "cpu-b")
        for gpu in ("webgpu", "torch"):
            if gpu in names and nf.find_backend(gpu) is not None:
                lazy_move("cpu", gpu)
        print(f"memory: num_tensors={nf.memory().num_tensors}")
    finally:
        nf.set_backend(default)
        nf.remove_backend("cpu-b")
    print(f"backends now: {', '.join(nf.engine().backend_names())}; active: {nf.get_backend()}")


if __name__ == "__main__":
    main()
