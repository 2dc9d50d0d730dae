"""``ndflow/core/kernel_names.py`` names every kernel: each kernel any backend registers and each gradient's
kernel is one of its constants (TF.js's kernel names plus ndflow's own ``_Ndflow*`` kernels), and the ops and
gradients name kernels through those constants, and the backends register under them, not through string literals."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import ndflow as nf  # noqa: F401  (registers the backends, their kernels and the gradients)
from ndflow.core import kernel_names as kn
from ndflow.core import kernel_registry
from ndflow.core.engine import ENGINE

PACKAGE = Path(__file__).resolve().parents[2] / "ndflow"
NAMES = {value for key, value in vars(kn).items() if not key.startswith("__") and isinstance(value, str)}
KERNEL_NAMES = NAMES - {kn.OP_SCOPE_SUFFIX}


def test_every_constant_is_named_as_its_kernel():
    for key, value in vars(kn).items():
        if not key.startswith("__") and key != "OP_SCOPE_SUFFIX":
            assert key == value, f"kernel_names.{key} = {value!r}"


@pytest.mark.parametrize("backend_name", ENGINE.backend_names())
def test_every_registered_kernel_is_in_kernel_names(backend_name):
    registered = {config.kernel_name for config in kernel_registry.get_kernels_for_backend(backend_name)}
    assert sorted(registered - KERNEL_NAMES) == [], f"kernels of backend '{backend_name}' missing in kernel_names"


def test_every_gradient_s_kernel_is_in_kernel_names():
    gradients = set(kernel_registry._GRADIENTS)
    assert gradients, "no gradient is registered"
    assert sorted(gradients - KERNEL_NAMES) == []


def _kernel_name_literals(path: Path) -> list[str]:
    """String literals in ``path`` that spell a kernel name (docstrings and f-strings aside)."""
    tree = ast.parse(path.read_text())
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            skip.update(id(part) for part in ast.walk(node))
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            skip.add(id(body[0].value))
    return [
        f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: {node.value!r}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value in KERNEL_NAMES and id(node) not in skip
    ]


@pytest.mark.parametrize("folder", ["ops", "gradients"])
def test_ops_and_gradients_name_kernels_by_constant(folder):
    found = [hit for path in sorted((PACKAGE / folder).rglob("*.py")) for hit in _kernel_name_literals(path)]
    assert found == [], "use ndflow.core.kernel_names constants: " + "; ".join(found)


def _registration_literals(path: Path) -> list[str]:
    """Kernel names spelled as literals in the first argument of a registration call (``@cpu_kernel("Add")``,
    ``register_kernel("Add", ...)``, ``binary_kernel("Add", ...)``, ``register_direct(...)``, ...)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)):
            continue
        func = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        registers = func.endswith(("_kernel", "_kernels")) or func.startswith("register_")
        if registers and node.args[0].value in KERNEL_NAMES:
            found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: {func}({node.args[0].value!r})")
    return found


def test_backends_register_kernels_by_constant():
    found = [hit for path in sorted((PACKAGE / "backends").rglob("*.py")) for hit in _registration_literals(path)]
    assert found == [], "register under ndflow.core.kernel_names constants: " + "; ".join(found)
