"""What type checkers see of ndflow: the generated typing files are current, public signatures do not hand ``Any``
to a user's tensors, and ``mypy --strict`` accepts the typed example."""

from __future__ import annotations

import importlib.util
import inspect
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import ndflow as nf
from ndflow import ops

ROOT = Path(__file__).resolve().parent.parent

#: Parameters that take a tensor (or values made into one) in the layers and model APIs.
TENSOR_PARAMETERS = frozenset({"x", "y", "a", "b", "input", "inputs", "tensor", "tensors", "values", "xs", "ys"})
#: Op parameters that are options, not tensors (an ``Any`` there hands no tensor to the user untyped).
OP_OPTIONS = frozenset({"pad", "reduction"})
#: The model methods whose tensor arguments and results are checked.
MODEL_METHODS = ("compile", "fit", "fit_async", "fit_dataset", "evaluate", "evaluate_async", "evaluate_dataset",
                 "predict", "predict_on_batch", "train_on_batch", "execute", "save")  # fmt: skip


def _tool(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_typing_files_are_current() -> None:
    stale = _tool("gen_typing").stale()
    assert not stale, f"stale: {[str(p.relative_to(ROOT)) for p in stale]}: run python tools/gen_typing.py"


def test_type_checkers_see_every_top_level_op() -> None:
    from ndflow.ops import _exports

    namespaces = sorted(ops.NAMESPACES & ops.families.keys())
    assert sorted(_exports.__all__) == sorted([*ops.__all__, *namespaces])
    assert all(getattr(_exports, name) is getattr(nf, name) for name in _exports.__all__)


def test_py_typed_ships_with_the_package() -> None:
    assert (ROOT / "ndflow" / "py.typed").exists()
    assert '"py.typed"' in (ROOT / "pyproject.toml").read_text()


def _untyped(annotation: Any) -> bool:
    return annotation is inspect.Parameter.empty or re.search(r"\bAny\b", str(annotation)) is not None


def _offenders(label: str, fn: Callable[..., Any], tensor_parameter: Callable[[str], bool]) -> Iterator[str]:
    fn = getattr(fn, "__wrapped__", fn)
    signature = inspect.signature(fn)
    for p in signature.parameters.values():
        if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and tensor_parameter(p.name):
            if _untyped(p.annotation):
                yield f"{label}({p.name}: {p.annotation if p.annotation is not p.empty else 'unannotated'})"
    if _untyped(signature.return_annotation):
        yield f"{label} -> {signature.return_annotation if signature.return_annotation is not p.empty else '?'}"


def _op_functions(modules: Callable[[str], bool]) -> Iterator[tuple[str, Callable[..., Any]]]:
    for family, module in sorted(ops.families.items()):
        if not modules(family):
            continue
        prefix = f"{family}." if family in ops.NAMESPACES else ""
        for name in module.__all__:
            obj = getattr(module, name)
            if callable(obj) and not isinstance(obj, type):
                yield f"nf.{prefix}{name}", obj


def _report(offenders: list[str]) -> str:
    return f"{len(offenders)} public signatures hand Any to a user's tensors:\n  " + "\n  ".join(offenders)


def test_ops_have_typed_tensor_arguments_and_results() -> None:
    offenders = [
        o
        for label, fn in _op_functions(lambda family: True)
        for o in _offenders(label, fn, lambda name: name not in OP_OPTIONS)
    ]
    assert not offenders, _report(offenders)


def test_layer_factories_have_typed_tensor_arguments_and_results() -> None:
    offenders = []
    for name in sorted(nf.layers.__all__) if hasattr(nf.layers, "__all__") else []:
        obj = getattr(nf.layers, name)
        if inspect.isfunction(obj) and name[:1].islower():
            offenders.extend(_offenders(f"nf.layers.{name}", obj, TENSOR_PARAMETERS.__contains__))
    assert not offenders, _report(offenders)


def test_model_methods_have_typed_tensor_arguments_and_results() -> None:
    offenders = []
    for cls in (nf.LayersModel, nf.Sequential, nf.GraphModel):
        for name in MODEL_METHODS:
            method = getattr(cls, name, None)
            if method is not None:
                offenders.extend(_offenders(f"{cls.__name__}.{name}", method, TENSOR_PARAMETERS.__contains__))
    assert not offenders, _report(offenders)


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy is not installed (pip install -e '.[test]')")
def test_mypy_strict_accepts_the_typed_example(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path), "examples/typed_usage.py"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy is not installed (pip install -e '.[test]')")
def test_mypy_checks_layer_factory_arguments(tmp_path: Path) -> None:
    """The factories' generated signatures reach type checkers: a misspelled option is an error, not an Any."""
    program = tmp_path / "use.py"
    program.write_text("import ndflow as nf\n\nlayer = nf.layers.dense(unitz=4)\n")
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "cache"), str(program)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert 'Unexpected keyword argument "unitz" for "dense"; did you mean "units"?' in result.stdout, result.stdout
