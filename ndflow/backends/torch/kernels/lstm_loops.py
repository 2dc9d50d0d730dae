"""An LSTM's training loop and its backward pass on torch tensors for the common activations (``tanh`` and a
``sigmoid`` recurrent activation): the loops of ``backends/shared/rnn_loop.py`` (the same arrays in, the same
saved values out, in processing order) written with torch's fused operations — one ``sigmoid`` over the four
gates, ``addmm`` / ``addcmul`` — so that a step is about 11 operations forward and 20 backward instead of 26 and
45. Every step of a 50-step sequence is a few kernel launches, which is what the loop's time is made of on small
batches. Rounding is torch's (its ``sigmoid`` is not ``1 / (1 + exp(-x))`` to the last bit): the torch backend's
own kernels round the same way."""

from __future__ import annotations

import torch

from ...shared.rnn_loop import lstm_grad_step_inputs


def train_loop(
    p: torch.Tensor, rk: torch.Tensor, h0: torch.Tensor, c0: torch.Tensor, backwards: bool
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(h, c, zs, cs, hs)``: the final states and each step's gate pre-activations, cell states and outputs."""
    batch, steps, units = p.shape[0], p.shape[1], rk.shape[0]
    zs = torch.empty((batch, steps, 4 * units), dtype=torch.float32, device=p.device)
    cs = torch.empty((batch, steps, units), dtype=torch.float32, device=p.device)
    hs = torch.empty((batch, steps, units), dtype=torch.float32, device=p.device)
    h, c = h0, c0
    u2, u3 = 2 * units, 3 * units
    for t in range(steps):
        z = torch.addmm(p[:, steps - 1 - t if backwards else t], h, rk)
        zs[:, t] = z
        s = torch.sigmoid(z)
        c = torch.addcmul(s[:, units:u2] * c, s[:, :units], torch.tanh(z[:, u2:u3]))
        h = s[:, u3:] * torch.tanh(c)
        cs[:, t] = c
        hs[:, t] = h
    return h, c, zs, cs, hs


def grad_loop(
    d_out: torch.Tensor, dh: torch.Tensor, dc: torch.Tensor, rk: torch.Tensor, h0: torch.Tensor,
    c0: torch.Tensor, zs: torch.Tensor, cs: torch.Tensor, hs: torch.Tensor, backwards: bool, sequences: bool,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:  # fmt: skip
    """``(dp, drk, dh0, dc0)`` of :func:`train_loop` from its outputs' gradients (``d_out``: the sequence's with
    ``sequences``, else the last output's; ``dh``, ``dc``: the final states')."""
    batch, steps, units = zs.shape[0], zs.shape[1], rk.shape[0]
    dp = torch.empty((batch, steps, 4 * units), dtype=torch.float32, device=zs.device)
    drk = torch.zeros((units, 4 * units), dtype=torch.float32, device=zs.device)
    u2, u3 = 2 * units, 3 * units
    if not sequences:
        dh = dh + d_out
    rk_t = rk.t()
    for t in range(steps - 1, -1, -1):
        dh, z, c, c_prev, h_prev = lstm_grad_step_inputs(d_out, dh, zs, cs, hs, h0, c0, t, sequences)
        s = torch.sigmoid(z)
        g = torch.tanh(z[:, u2:u3])
        ac = torch.tanh(c)
        i, f, o = s[:, :units], s[:, units:u2], s[:, u3:]
        dc = torch.addcmul(dc, dh * o, 1.0 - ac * ac)
        local = s * (1.0 - s)  # the sigmoid's derivative for i, f and o; the cell input's below
        local[:, u2:u3] = 1.0 - g * g
        dz = torch.cat((dc * g, dc * c_prev, dc * i, dh * ac), 1)
        dz *= local
        dp[:, steps - 1 - t if backwards else t] = dz
        drk.addmm_(h_prev.t(), dz)
        dh = dz @ rk_t
        dc = dc * f
    return dp, drk, dh, dc


__all__ = ["grad_loop", "train_loop"]
