"""Space, batch and depth rearrangements on the GPU: SpaceToBatchND, BatchToSpaceND, DepthToSpace.

Where the cpu kernels reshape, transpose and reshape (with a pad or a crop), each output element here finds
its input element directly from its coordinates (an index map, see ``shape.py``): one pass, no intermediate
tensors; padded positions of SpaceToBatchND write 0. Block sizes, paddings and crops are parameters; the
number of block dimensions, the rank and the data format are part of the program.
complex64 and string tensors have no GPU storage: their kernels are forwarded to the cpu kernels.
"""

from __future__ import annotations

import math

from ....core import kernel_names as kn
from .common import Output, WebGPUBackend, gpu_kernel, on_gpu_dtypes, strides_of
from .shape import index_map


def _forward(name: str, backend: WebGPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    from .forward import forward

    return forward(name, backend, inputs, attrs)  # type: ignore[return-value]


def _rest_terms(first: int, rank: int) -> list[str]:
    return [f"  s = s + c[{d}] * x_strides[{d}];" for d in range(first, rank)]


def _s2b_body(m: int, rank: int) -> str:
    lines = ["  let n = c[0] % sb_batch; var blk = c[0] / sb_batch;", "  var s = n * x_strides[0]; var xc = 0;"]
    for i in range(m, 0, -1):  # the block offsets, last block dimension fastest
        lines.append(f"  let r{i} = blk % sb_block[{i - 1}]; blk = blk / sb_block[{i - 1}];")
    for i in range(1, m + 1):
        lines.append(f"  xc = c[{i}] * sb_block[{i - 1}] + r{i} - sb_pad[{i - 1}];")
        lines.append(f"  if (xc < 0 || xc >= x_shape[{i}]) {{ return -1; }}")
        lines.append(f"  s = s + xc * x_strides[{i}];")
    return "\n".join(lines + _rest_terms(m + 1, rank) + ["  return s;"])


@gpu_kernel(kn.SpaceToBatchND)
def space_to_batch_nd(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    if not on_gpu_dtypes(x):
        return _forward("SpaceToBatchND", backend, inputs, attrs)
    block, paddings = [int(b) for b in attrs["block_shape"]], [tuple(p) for p in attrs["paddings"]]
    m, rank = len(block), len(x.shape)
    outer = [(d + p0 + p1) // b for d, (p0, p1), b in zip(x.shape[1 : 1 + m], paddings, block, strict=True)]
    out_shape = [x.shape[0] * math.prod(block), *outer, *x.shape[1 + m :]]
    params = {
        "x_shape": list(x.shape),
        "x_strides": strides_of(x.shape),
        "sb_batch": x.shape[0],
        "sb_block": block,
        "sb_pad": [int(p[0]) for p in paddings],
    }
    key = ("space_to_batch", m)
    return index_map(backend, key, x, out_shape, _s2b_body(m, rank), params, fill=0.0 if x.dtype == "float32" else 0)


def _b2s_body(m: int, rank: int) -> str:
    lines = ["  var s = 0; var blk = 0; var f = 0;"]
    for i in range(1, m + 1):
        lines.append(f"  f = c[{i}] + bs_crop[{i - 1}];")
        lines.append(f"  s = s + (f / bs_block[{i - 1}]) * x_strides[{i}];")
        lines.append(f"  blk = blk * bs_block[{i - 1}] + f % bs_block[{i - 1}];")
    lines.append("  s = s + (blk * bs_batch + c[0]) * x_strides[0];")
    return "\n".join(lines + _rest_terms(m + 1, rank) + ["  return s;"])


@gpu_kernel(kn.BatchToSpaceND)
def batch_to_space_nd(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    if not on_gpu_dtypes(x):
        return _forward("BatchToSpaceND", backend, inputs, attrs)
    block, crops = [int(b) for b in attrs["block_shape"]], [tuple(c) for c in attrs["crops"]]
    m, rank = len(block), len(x.shape)
    batch = x.shape[0] // math.prod(block)
    spatial = [d * b - c0 - c1 for d, b, (c0, c1) in zip(x.shape[1 : 1 + m], block, crops, strict=True)]
    out_shape = [batch, *spatial, *x.shape[1 + m :]]
    params = {
        "x_strides": strides_of(x.shape),
        "bs_batch": batch,
        "bs_block": block,
        "bs_crop": [int(c[0]) for c in crops],
    }
    return index_map(backend, ("batch_to_space", m), x, out_shape, _b2s_body(m, rank), params)


_D2S = {
    "NHWC": "n * x_strides[0] + h * x_strides[1] + w * x_strides[2] + channel * x_strides[3]",
    "NCHW": "n * x_strides[0] + channel * x_strides[1] + h * x_strides[2] + w * x_strides[3]",
}


@gpu_kernel(kn.DepthToSpace)
def depth_to_space(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    if not on_gpu_dtypes(x):
        return _forward("DepthToSpace", backend, inputs, attrs)
    bs, fmt = int(attrs["block_size"]), attrs["data_format"]
    if fmt == "NHWC":
        n, h, w, c = x.shape
        out_shape = [n, h * bs, w * bs, c // (bs * bs)]
        coords = "let n = c[0]; let yy = c[1]; let xx = c[2]; let d = c[3];"
    else:
        n, c, h, w = x.shape
        out_shape = [n, c // (bs * bs), h * bs, w * bs]
        coords = "let n = c[0]; let d = c[1]; let yy = c[2]; let xx = c[3];"
    body = (
        f"  {coords}\n"
        "  let h = yy / d2s_block; let w = xx / d2s_block;\n"
        "  let channel = ((yy - h * d2s_block) * d2s_block + xx - w * d2s_block) * d2s_depth + d;\n"
        f"  return {_D2S[fmt]};"
    )
    params = {"x_strides": strides_of(x.shape), "d2s_block": bs, "d2s_depth": c // (bs * bs)}
    return index_map(backend, ("depth_to_space", fmt), x, out_shape, body, params)
