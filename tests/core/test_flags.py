"""Flags: ``nf.env()`` get/set/reset, lazy evaluation, set hooks, and the NDFLOW_FLAGS variable."""

from __future__ import annotations

import pytest

import ndflow as nf
from ndflow.core import flags as flags_module
from ndflow.core.flags import Environment


@pytest.fixture
def fresh_env(monkeypatch):
    """A new ``Environment`` that reads no NDFLOW_FLAGS (unless a test sets it before creating one)."""
    monkeypatch.delenv("NDFLOW_FLAGS", raising=False)
    return Environment()


# ---------------------------------------------------------------------------------------------
# the global environment
# ---------------------------------------------------------------------------------------------
def test_env_is_a_singleton():
    assert nf.env() is nf.env()
    assert nf.env() is flags_module.env()


def test_builtin_flags_have_defaults():
    env = nf.env()
    assert env.get("DEBUG") is False
    assert env.get("PROD") is False
    assert env.get_bool("DEBUG") is False
    features = env.features()
    assert {"DEBUG", "PROD"} <= set(features)
    assert features["DEBUG"] is False


def test_set_get_and_reset():
    env = nf.env()
    try:
        env.set("DEBUG", True)
        assert env.get("DEBUG") is True
        assert env.get_bool("DEBUG") is True
        assert env.get_flags()["DEBUG"] is True
        env.set("PROD", True)
        assert env.get_bool("PROD") is True
    finally:
        env.reset()
    assert env.get("DEBUG") is False
    assert env.get("PROD") is False


def test_set_hook_drives_the_engine():
    """Setting DEBUG through env() turns debug mode on (a NaN output raises); reset turns it off."""
    x = nf.zeros([2])
    try:
        nf.env().set("DEBUG", True)
        with pytest.raises(nf.ComputationError):
            nf.log(x)
        nf.env().reset()
        y = nf.log(x)  # -Infinity is a value again
        y.dispose()
    finally:
        nf.env().reset()
        x.dispose()


@pytest.mark.parametrize("call", ["get", "get_bool", "get_number"])
def test_unknown_flag_raises_key_error_naming_it(call):
    with pytest.raises(KeyError, match="NO_SUCH_FLAG"):
        getattr(nf.env(), call)("NO_SUCH_FLAG")


def test_setting_an_unknown_flag_raises_key_error_naming_it():
    with pytest.raises(KeyError, match="NO_SUCH_FLAG"):
        nf.env().set("NO_SUCH_FLAG", True)
    assert not nf.env().has("NO_SUCH_FLAG")


def test_get_bool_and_get_number_check_the_type(fresh_env):
    fresh_env.register_flag("A_NUMBER", lambda: 3)
    fresh_env.register_flag("A_FLOAT", lambda: 0.25)
    fresh_env.register_flag("A_BOOL", lambda: True)
    fresh_env.register_flag("A_STRING", lambda: "x")
    assert fresh_env.get_number("A_NUMBER") == 3
    assert fresh_env.get_number("A_FLOAT") == 0.25
    assert fresh_env.get_bool("A_BOOL") is True
    with pytest.raises(TypeError, match="A_NUMBER"):
        fresh_env.get_bool("A_NUMBER")
    with pytest.raises(TypeError, match="A_BOOL"):
        fresh_env.get_number("A_BOOL")  # a bool is not a number here
    with pytest.raises(TypeError, match="A_STRING"):
        fresh_env.get_number("A_STRING")
    assert nf.env().get("DEBUG") is False
    with pytest.raises(TypeError):
        nf.env().get_number("DEBUG")


# ---------------------------------------------------------------------------------------------
# lazy evaluation and hooks
# ---------------------------------------------------------------------------------------------
def test_evaluator_runs_only_on_first_get(fresh_env):
    calls: list[int] = []

    def evaluator():
        calls.append(1)
        return 42

    fresh_env.register_flag("LAZY", evaluator)
    assert calls == []  # registering does not evaluate
    assert "LAZY" not in fresh_env.get_flags()
    assert fresh_env.get("LAZY") == 42
    assert calls == [1]
    assert fresh_env.get("LAZY") == 42
    assert fresh_env.get_number("LAZY") == 42
    assert calls == [1]  # cached
    assert fresh_env.get_flags() == {"LAZY": 42}


def test_evaluator_returning_false_is_cached_too(fresh_env):
    calls: list[int] = []
    fresh_env.register_flag("OFF", lambda: calls.append(1) or False)
    assert fresh_env.get("OFF") is False
    assert fresh_env.get("OFF") is False
    assert calls == [1]


def test_set_overrides_without_evaluating(fresh_env):
    calls: list[int] = []
    fresh_env.register_flag("F", lambda: calls.append(1) or 1)
    fresh_env.set("F", 7)
    assert fresh_env.get("F") == 7
    assert calls == []


def test_reset_forgets_values_and_re_evaluates(fresh_env):
    calls: list[int] = []
    fresh_env.register_flag("F", lambda: calls.append(1) or 1)
    fresh_env.set("F", 7)
    fresh_env.reset()
    assert calls == []  # a flag without a hook stays lazy after reset
    assert fresh_env.get("F") == 1
    assert calls == [1]


def test_register_flag_with_set_hook(fresh_env):
    seen: list[object] = []
    fresh_env.register_flag("HOOKED", lambda: "default", lambda value: seen.append(value))
    assert seen == []
    fresh_env.set("HOOKED", "one")
    fresh_env.set("HOOKED", "two")
    assert seen == ["one", "two"]
    assert fresh_env.get("HOOKED") == "two"
    fresh_env.reset()  # hooks see the value after reset: the evaluator's
    assert seen == ["one", "two", "default"]
    assert fresh_env.get("HOOKED") == "default"


def test_set_flags_sets_several(fresh_env):
    fresh_env.register_flag("A", lambda: 0)
    fresh_env.register_flag("B", lambda: False)
    fresh_env.set_flags({"A": 5, "B": True})
    assert (fresh_env.get("A"), fresh_env.get("B")) == (5, True)
    with pytest.raises(KeyError, match="C"):
        fresh_env.set_flags({"C": 1})


def test_features_evaluates_every_flag(fresh_env):
    fresh_env.register_flag("X", lambda: 1)
    fresh_env.register_flag("Y", lambda: "y")
    assert fresh_env.get_flags() == {}
    assert fresh_env.features() == {"X": 1, "Y": "y"}


# ---------------------------------------------------------------------------------------------
# NDFLOW_FLAGS
# ---------------------------------------------------------------------------------------------
def test_ndflow_flags_environment_variable(monkeypatch):
    monkeypatch.setenv("NDFLOW_FLAGS", "DEBUG=true,OFF=false,K=5,R=0.5,S=abc,E=1e3")
    env = Environment()
    calls: list[str] = []
    for name, default in [("DEBUG", False), ("OFF", True), ("K", 1), ("R", 1.0), ("S", "x"), ("E", 0), ("Z", 7)]:
        env.register_flag(name, lambda name=name, default=default: calls.append(name) or default)
    assert env.get("DEBUG") is True
    assert env.get("OFF") is False
    assert env.get("K") == 5 and isinstance(env.get("K"), int)
    assert env.get("R") == 0.5
    assert env.get("S") == "abc"
    assert env.get("E") == 1000
    assert env.get("Z") == 7  # not overridden: its evaluator
    assert calls == ["Z"]  # overridden flags are never evaluated


def test_ndflow_flags_whitespace_and_empty_items(monkeypatch):
    monkeypatch.setenv("NDFLOW_FLAGS", " A = 3 ,, B=TRUE ,")
    env = Environment()
    env.register_flag("A", lambda: 0)
    env.register_flag("B", lambda: False)
    assert env.get("A") == 3
    assert env.get("B") is True


def test_ndflow_flags_calls_the_set_hook_at_registration(monkeypatch):
    monkeypatch.setenv("NDFLOW_FLAGS", "HOOKED=true")
    env = Environment()
    seen: list[object] = []
    env.register_flag("HOOKED", lambda: False, seen.append)
    assert seen == [True]
    assert env.get("HOOKED") is True


def test_ndflow_flags_wins_over_reset(monkeypatch):
    monkeypatch.delenv("NDFLOW_FLAGS", raising=False)
    env = Environment()
    env.register_flag("LEVEL", lambda: 1)
    assert env.get("LEVEL") == 1
    monkeypatch.setenv("NDFLOW_FLAGS", "LEVEL=9")
    env.reset()  # re-reads the variable
    assert env.get("LEVEL") == 9
    env.set("LEVEL", 2)
    assert env.get("LEVEL") == 2
    env.reset()
    assert env.get("LEVEL") == 9


def test_ndflow_flags_for_unregistered_names_are_ignored_until_registered(monkeypatch):
    monkeypatch.setenv("NDFLOW_FLAGS", "LATER=4")
    env = Environment()
    with pytest.raises(KeyError):
        env.get("LATER")
    env.register_flag("LATER", lambda: 0)
    assert env.get("LATER") == 4


@pytest.mark.parametrize(
    ("text", "fragment"),
    [("DEBUG", "DEBUG"), ("A=1,B", "B"), ("K=", "K"), ("=3", "=3")],
    ids=["no_equals", "second_item_no_equals", "empty_value", "empty_name"],
)
def test_malformed_ndflow_flags_raise(monkeypatch, text, fragment):
    monkeypatch.setenv("NDFLOW_FLAGS", text)
    with pytest.raises(ValueError, match="NDFLOW_FLAGS") as info:
        Environment()
    assert fragment in str(info.value)
