"""The TORCH_TF32 flag: off by default (float32 means float32 on CUDA), applied to torch's process-global
TF32 settings when the torch backend is created and whenever the flag is set afterwards; before any torch
backend exists, setting it leaves torch alone."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import ndflow as nf

torch = pytest.importorskip("torch", reason="the torch backend needs torch (pip install -e '.[torch]')")

from ndflow.backends.torch import TorchBackend  # noqa: E402


def _settings() -> tuple[bool, bool, str]:
    return (
        torch.backends.cuda.matmul.allow_tf32,
        torch.backends.cudnn.allow_tf32,
        torch.get_float32_matmul_precision(),
    )


@pytest.fixture
def restore_tf32():
    saved = _settings()
    yield
    nf.env().set("TORCH_TF32", False)
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved[0], saved[1]
    torch.set_float32_matmul_precision(saved[2])


def test_default_is_off():
    assert nf.env().get("TORCH_TF32") is False


def test_backend_creation_applies_the_flag(restore_tf32):
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    torch.set_float32_matmul_precision("high")
    TorchBackend("cpu").dispose()
    assert _settings() == (False, False, "highest")


def test_setting_the_flag_flips_torch_settings(restore_tf32):
    TorchBackend("cpu").dispose()
    nf.env().set("TORCH_TF32", True)
    assert _settings() == (True, True, "high")
    nf.env().set("TORCH_TF32", False)
    assert _settings() == (False, False, "highest")


def test_flag_on_at_creation(restore_tf32):
    nf.env().set("TORCH_TF32", True)
    TorchBackend("cpu").dispose()
    assert _settings() == (True, True, "high")


def test_conv_precise_follows_the_flag(restore_tf32):
    from ndflow.backends.torch.kernels.conv import precise

    TorchBackend("cpu").dispose()
    nf.env().set("TORCH_TF32", True)
    with precise(torch.device("cuda")):  # entering only flips settings: no CUDA needed
        assert torch.backends.cudnn.allow_tf32 is True
    nf.env().set("TORCH_TF32", False)
    torch.backends.cudnn.allow_tf32 = True
    with precise(torch.device("cuda")):
        assert torch.backends.cudnn.allow_tf32 is False
    assert torch.backends.cudnn.allow_tf32 is True


def test_flag_alone_leaves_torch_untouched():
    """In a fresh process without a torch backend: setting TORCH_TF32 neither imports torch nor changes it."""
    code = (
        "import sys, ndflow as nf\n"
        "nf.env().set('TORCH_TF32', False)\n"
        "assert 'torch' not in sys.modules, 'the flag imported torch'\n"
        "import torch\n"
        "torch.backends.cudnn.allow_tf32 = True\n"
        "nf.env().set('TORCH_TF32', False)\n"
        "assert torch.backends.cudnn.allow_tf32 is True\n"
        "nf.set_backend('torch')\n"
        "assert torch.backends.cudnn.allow_tf32 is False\n"
        "assert torch.get_float32_matmul_precision() == 'highest'\n"
    )
    env = dict(os.environ, NDFLOW_FLAGS="TORCH_DEVICE=cpu")
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
