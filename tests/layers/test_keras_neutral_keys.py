"""Config keys newer Keras writes that TF.js's layers lack (``groups``, ``ragged``): their default loads quietly,
any other value is refused (a grouped convolution must not load as a plain one)."""

from __future__ import annotations

import logging

import pytest

import ndflow as nf


def test_default_values_load_without_a_warning(caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="ndflow"):
        layer = nf.layers.Conv2D.from_config({"filters": 2, "kernel_size": 3, "groups": 1})
        nf.layers.InputLayer.from_config({"batch_input_shape": [None, 4], "ragged": False})
    assert layer.filters == 2 and not caplog.records


@pytest.mark.parametrize(
    "cls, config, message",
    [
        (nf.layers.Conv2D, {"filters": 2, "kernel_size": 3, "groups": 2}, "Conv2D.from_config: groups=2"),
        (nf.layers.InputLayer, {"batch_input_shape": [None, 4], "ragged": True}, "InputLayer.from_config: ragged=True"),
    ],
)
def test_other_values_are_refused(cls, config, message) -> None:
    with pytest.raises(NotImplementedError, match=message):
        cls.from_config(config)
