"""Each ported TF.js program in ``examples/ported/`` differs from its TF.js original only in syntax.

Checked loosely but mechanically: the sequence of names called (``name(``, functions and methods alike) in the
``.py`` file is the ``.js`` file's, with camelCase turned into snake_case, once strings and comments are dropped
and the few names that are only each language's glue are left out (``console.log`` / ``print``, ``require``,
``fs.readFileSync`` / ``Path(...).read_bytes``, array ``push`` / list ``append``, ...); and both ``await`` as
often."""

from __future__ import annotations

import io
import keyword
import re
import tokenize
from pathlib import Path

import pytest

PORTED = Path(__file__).resolve().parents[2] / "examples" / "ported"
PROGRAMS = sorted(PORTED.glob("*.py"))

#: Calls that are one language's plumbing, with no counterpart call in the other (or a different one).
JS_GLUE = {"require", "log", "readFileSync", "filter", "push", "for", "if", "while", "switch", "catch", "function"}
PY_GLUE = {"print", "range", "len", "Path", "read_bytes", "append", "run", "float", "int", "str", "round"}

_JS_DROP = re.compile(r"//[^\n]*|/\*.*?\*/|'(?:\\.|[^'\\\n])*'|\"(?:\\.|[^\"\\\n])*\"|`(?:\\.|[^`\\])*`", re.S)
_CALL = re.compile(r"\b([A-Za-z_$][\w$]*)\s*\(")


def snake(name: str) -> str:
    """TF.js's camelCase name in ndflow's snake_case (``matMul`` -> ``mat_mul``, ``tensor2d`` unchanged)."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def js_calls(source: str) -> list[str]:
    """The names called in a JavaScript program, in order, snake_cased, without strings, comments and glue."""
    code = _JS_DROP.sub(" ", source)
    return [snake(name) for name in _CALL.findall(code) if name not in JS_GLUE]


def py_calls(source: str) -> list[str]:
    """The names called in a Python program, in order, without strings, comments and glue."""
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    tokens = [t for t in tokens if t.type in (tokenize.NAME, tokenize.OP)]
    return [
        a.string
        for a, b in zip(tokens, tokens[1:], strict=False)
        if a.type == tokenize.NAME and b.string == "(" and a.string not in PY_GLUE and not keyword.iskeyword(a.string)
    ]


def test_every_port_has_its_original() -> None:
    assert len(PROGRAMS) >= 5
    for program in PROGRAMS:
        assert program.with_suffix(".js").is_file(), f"{program.name} has no TF.js original beside it"


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_the_port_calls_what_the_original_calls(program: Path) -> None:
    ours, theirs = py_calls(program.read_text()), js_calls(program.with_suffix(".js").read_text())
    assert len(theirs) >= 10, theirs
    assert ours == theirs, f"{program.name} vs {program.with_suffix('.js').name}:\n py: {ours}\n js: {theirs}"
    awaits_py = sum(t.string == "await" for t in tokenize.generate_tokens(io.StringIO(program.read_text()).readline))
    awaits_js = len(re.findall(r"\bawait\b", _JS_DROP.sub(" ", program.with_suffix(".js").read_text())))
    assert awaits_py == awaits_js, f"{program.name}: {awaits_py} await(s), its original {awaits_js}"


def test_the_comparison_notices_a_difference() -> None:
    assert js_calls("const y = tf.matMul(a, b).dataSync(); // tf.add(x)") == ["mat_mul", "data_sync"]
    assert py_calls('y = nf.mat_mul(a, b).data_sync()  # nf.add(x)\nprint("nf.sub(a)")') == ["mat_mul", "data_sync"]
    assert py_calls("y = nf.mat_mul(a, b).data()") != js_calls("const y = tf.matMul(a, b).dataSync();")
