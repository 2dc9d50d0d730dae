"""A TF.js option spelled in camelCase (``dataFormat=``, ``keepDims=``) gets its snake_case name in the error, for
every public op that has such an option, the compiled ones included."""

from __future__ import annotations

import asyncio
import inspect

import pytest

import ndflow as nf
from ndflow import ops
from ndflow.core.arguments import snake_case


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _cases() -> list[tuple[str, object, str]]:
    cases = []
    for family, module in sorted(ops.families.items()):
        for name in module.__all__:
            fn = getattr(module, name)
            try:
                params = inspect.signature(fn).parameters.values()
            except (TypeError, ValueError):
                continue
            for p in params:
                if "_" in p.name.strip("_") and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.POSITIONAL_ONLY):
                    if snake_case(_camel(p.name)) == p.name:
                        cases.append((f"{family}.{name}", fn, p.name))
                    break
    return cases


CASES = _cases()


def test_there_are_many_ops_with_such_options() -> None:
    assert len(CASES) > 80


@pytest.mark.parametrize("label, fn, param", CASES, ids=[c[0] for c in CASES])
def test_camel_case_option_gets_the_hint(label: str, fn, param: str) -> None:
    with pytest.raises(TypeError, match=rf"unexpected argument\(s\) '{_camel(param)}' \(use '{param}'\)"):
        if inspect.iscoroutinefunction(fn):
            asyncio.run(fn(**{_camel(param): 1}))
        else:
            fn(**{_camel(param): 1})


def test_a_compiled_op_on_its_fast_path_is_unchanged() -> None:
    a = nf.tensor([1.0, 2.0])
    total = nf.sum(a)
    assert float(total.data_sync()[0]) == 3.0
    with pytest.raises(TypeError, match=r"sum: unexpected argument\(s\) 'keepDims' \(use 'keep_dims'\)"):
        nf.sum(a, keepDims=True)
    nf.dispose([a, total])
