"""WGSL programs: the module text around a kernel's code, and the parameters it reads.

A kernel describes a program by its bindings (inputs and outputs, by name and dtype), its parameters
(ints, floats, lists of ints or floats) and its code. :func:`build_source` writes the full module:

- storage bindings ``<name>_buf`` and accessors ``load_<name>(i: i32) -> T`` and ``store_<name>(i, v: T)``,
  where ``T`` is the compute type (``f32`` for float32, ``i32`` for int32 and bool); float32 tensors are stored
  as ``f16`` when the backend's float16 mode is on, bools as ``i32`` 0/1;
- every parameter as a module-scope ``var<private>`` of the same name (``i32``, ``f32``,
  ``array<i32, N>``, ``array<f32, N>``): with shape uniforms on (flag ``WEBGPU_USE_SHAPES_UNIFORMS``, the
  default) they are read from a small storage buffer by ``load_params()`` so that one compiled program serves
  every shape; with it off they are baked into the text (one program per shape, as TF.js without uniforms);
- for element-wise programs the entry point: one invocation per index below ``invocations``, calling the
  kernel's ``fn compute(index: i32)`` (workgroups folded into x, y and z within
  ``maxComputeWorkgroupsPerDimension``). Programs that need workgroup memory write their own ``main``
  (``@workgroup_size(WG_X, WG_Y, WG_Z)``) and call ``load_params()`` first.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

COMPUTE_TYPE = {"float32": "f32", "int32": "i32", "bool": "i32"}
GPU_DTYPES = frozenset(COMPUTE_TYPE)

Param = int | float | Sequence[int] | Sequence[float]


@dataclass(frozen=True)
class ParamSlot:
    """Where a parameter lives in the parameter buffer: its name, kind ('i32'/'f32'), length (0: scalar)."""

    name: str
    kind: str
    length: int
    offset: int


def storage_type(dtype: str, float16: bool) -> str:
    """The WGSL element type a tensor of ``dtype`` is stored as."""
    if dtype == "float32":
        return "f16" if float16 else "f32"
    if dtype in ("int32", "bool"):
        return "i32"
    raise TypeError(f"webgpu: dtype {dtype} has no GPU storage")


def _kind(value: object) -> str:
    if isinstance(value, bool):
        return "i32"
    if isinstance(value, int):
        return "i32"
    if isinstance(value, float):
        return "f32"
    raise TypeError(f"webgpu program parameter: {value!r} is not an int or a float")


def param_layout(params: dict[str, Param]) -> tuple[ParamSlot, ...]:
    """The slots of ``params`` in the parameter buffer, in the dict's order."""
    slots, offset = [], 0
    for name, value in params.items():
        if isinstance(value, (list, tuple)):
            kind = _kind(value[0]) if value else "i32"
            if any(_kind(v) != kind for v in value):
                kind = "f32"
            slots.append(ParamSlot(name, kind, max(len(value), 1), offset))
            offset += max(len(value), 1)
        else:
            slots.append(ParamSlot(name, _kind(value), 0, offset))
            offset += 1
    return tuple(slots)


def _bits(value: float) -> int:
    return struct.unpack("<i", struct.pack("<f", value))[0]


def pack_params(slots: tuple[ParamSlot, ...], params: dict[str, Param]) -> list[int]:
    """The parameter buffer's int32 words (floats as their bits)."""
    words: list[int] = []
    for slot in slots:
        value = params[slot.name]
        values = list(value) if slot.length else [value]
        if slot.length and not values:
            values = [0]
        for v in values:
            words.append(_bits(float(v)) if slot.kind == "f32" else int(v))
    return words


def _literal(kind: str, value: object) -> str:
    if kind == "f32":
        return f"bitcast<f32>({_bits(float(value))}i)"
    return f"{int(value)}"  # an abstract int: "-2147483648i" is not a valid literal, the abstract value is


def _declare_params(slots: tuple[ParamSlot, ...], params: dict[str, Param], uniforms: bool) -> str:
    lines = []
    if uniforms and slots:
        lines.append("@group(0) @binding({binding}) var<storage, read> prm: array<i32>;")
    loads = []
    for s in slots:
        wgsl_type = f"array<{s.kind}, {s.length}>" if s.length else s.kind
        if uniforms:
            lines.append(f"var<private> {s.name}: {wgsl_type};")
            read = (lambda k: f"bitcast<f32>(prm[{k}])") if s.kind == "f32" else (lambda k: f"prm[{k}]")
            if s.length:
                items = ", ".join(read(s.offset + j) for j in range(s.length))
                loads.append(f"  {s.name} = {wgsl_type}({items});")
            else:
                loads.append(f"  {s.name} = {read(s.offset)};")
        else:
            value = params[s.name]
            # assigned in load_params(): bitcast<f32>() is not a constant expression for module-scope initializers
            lines.append(f"var<private> {s.name}: {wgsl_type};")
            if s.length:
                values = list(value) or [0]  # type: ignore[arg-type]
                items = ", ".join(_literal(s.kind, v) for v in values)
                loads.append(f"  {s.name} = {wgsl_type}({items});")
            else:
                loads.append(f"  {s.name} = {_literal(s.kind, value)};")
    lines.append("fn load_params() {\n" + "\n".join(loads) + "\n}")
    return "\n".join(lines)


def _accessors(name: str, dtype: str, float16: bool, writable: bool) -> str:
    t = COMPUTE_TYPE[dtype]
    s = storage_type(dtype, float16)
    lines = [f"fn load_{name}(i: i32) -> {t} {{ return {t}({name}_buf[i]); }}"]
    if writable:
        if dtype == "bool":
            lines.append(f"fn store_{name}(i: i32, v: i32) {{ {name}_buf[i] = select(0i, 1i, v != 0i); }}")
        else:
            lines.append(f"fn store_{name}(i: i32, v: {t}) {{ {name}_buf[i] = {s}(v); }}")
    return "\n".join(lines)


ELEMENTWISE_MAIN = """
@compute @workgroup_size(WG_X, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  load_params();
  let index = i32(gid.x) + (i32(gid.y) + i32(gid.z) * i32(nwg.y)) * i32(nwg.x) * WG_X;
  if (index >= invocations) { return; }
  compute(index);
}
"""


def build_source(
    code: str,
    inputs: Sequence[tuple[str, str]],
    outputs: Sequence[tuple[str, str]],
    slots: tuple[ParamSlot, ...],
    params: dict[str, Param],
    *,
    float16: bool,
    uniforms: bool,
    workgroup: tuple[int, int, int],
    elementwise: bool,
) -> str:
    """The WGSL module of a program (see the module docstring)."""
    parts = []
    if float16:
        parts.append("enable f16;")
    binding = 0
    for name, dtype in inputs:
        parts.append(
            f"@group(0) @binding({binding}) var<storage, read> {name}_buf: array<{storage_type(dtype, float16)}>;"
        )
        parts.append(_accessors(name, dtype, float16, writable=False))
        binding += 1
    for name, dtype in outputs:
        parts.append(
            f"@group(0) @binding({binding}) var<storage, read_write> {name}_buf: array<{storage_type(dtype, float16)}>;"
        )
        parts.append(_accessors(name, dtype, float16, writable=True))
        binding += 1
    parts.append(_declare_params(slots, params, uniforms).replace("{binding}", str(binding)))
    parts.append(
        f"const WG_X: i32 = {workgroup[0]}; const WG_Y: i32 = {workgroup[1]}; const WG_Z: i32 = {workgroup[2]};"
    )
    parts.append(code)
    if elementwise:
        parts.append(ELEMENTWISE_MAIN.replace("@workgroup_size(WG_X, 1, 1)", f"@workgroup_size({workgroup[0]}, 1, 1)"))
    return "\n".join(parts) + "\n"
