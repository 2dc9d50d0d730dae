"""ndflow.core.alea against seedrandom's Alea (values from the JS library: tests/fixtures/data/gen_data.js)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ndflow.core.alea import Alea, alea, js_seed_string

FIXTURE = json.loads((Path(__file__).parents[1] / "fixtures" / "data" / "tfjs_data.json").read_text())


@pytest.mark.parametrize("case", FIXTURE["alea"], ids=lambda c: repr(c["seed"]))
def test_alea_matches_seedrandom_bit_for_bit(case):
    r = alea(case["seed"])
    assert [r.random() for _ in range(20)] == case["random"]
    assert [r.int32() for _ in range(10)] == case["int32"]
    assert [r.double() for _ in range(10)] == case["double"]
    assert [r.quick() for _ in range(5)] == case["quick"]


@pytest.mark.parametrize("case", FIXTURE["alea_number_seeds"], ids=lambda c: repr(c["seed"]))
def test_number_seeds_are_hashed_as_js_strings(case):
    r = Alea(case["seed"])
    assert [r(), r(), r()] == case["random"]


def test_state_round_trip_and_seed_strings():
    r = Alea("abc")
    r.random()
    s = Alea.from_state(r.state())
    assert [s.random() for _ in range(5)] == [r.random() for _ in range(5)]
    assert js_seed_string(3.0) == "3" and js_seed_string(-7) == "-7" and js_seed_string(0.5) == "0.5"
    with pytest.raises(TypeError, match="alea: seed"):
        Alea(object())
