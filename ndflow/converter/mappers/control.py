"""Control-flow ops (TF.js converter category ``control``): frames, Switch/Merge, If/While with library
functions, TensorArray (v1) and TensorList (v2) state. All of them make a graph need ``execute_async``.

Frame ops change the execution context's frame stack (``ctx.enter_frame`` ...); TensorArray and
TensorList objects live in the context, known by their kept id tensor (the op's ``handle`` output).
Beyond TF.js: ``Merge`` also outputs ``value_index``, ``TensorListPopBack`` outputs ``(handle,
tensor)`` as TF does, ``NonMaxSuppressionV5`` (in ``dynamic``) its ``valid_outputs``.
"""

from __future__ import annotations

from typing import Any

from ... import ops
from ...core.tensor import Tensor
from ..load.graph import Node
from ..load.registry import op
from ..runtime.tensor_array import TensorArray
from ..runtime.tensor_list import from_tensor, reserve, scatter, split
from .graph import pass_through


def control(*names: str) -> Any:
    """Register a control-flow mapper (always ``needs_async``, as in TF.js)."""
    return op(*names, needs_async=True)


def _num(t: Tensor) -> Any:
    value = t.data_sync()[0]
    return value.item() if hasattr(value, "item") else value


def _ints(t: Tensor) -> list[int]:
    return [int(v) for v in t.data_sync()]


def _shape(t: Tensor) -> list[int] | None:
    """An element-shape input: a vector of dims, or a scalar (-1) for an unknown rank."""
    return None if t.rank == 0 else _ints(t)


def _args(node: Node, inputs: list[Any], n: int) -> list[Any]:
    if len(inputs) < n or any(t is None for t in inputs[:n]):
        raise ValueError(f"graph model: node '{node.name}' ({node.op}) needs {n} input(s), got {len(inputs)}")
    return inputs


async def _truthy(t: Tensor) -> bool:
    values = await t.data()
    return bool(values[0]) if len(values) else False


# -- frames and branches ---------------------------------------------------------------------------


@control("LoopCond")
def loop_cond(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """The loop predicate, passed on."""
    return pass_through(_args(node, inputs, 1)[0])


@control("Switch")
async def switch(node: Node, inputs: list[Any], ctx: Any) -> list[Tensor | None]:
    """``data`` on output 1 when ``pred`` is true, else on output 0 (the other output is dead)."""
    data, pred = _args(node, inputs, 2)[:2]
    data = pass_through(data)
    return [None, data] if await _truthy(pred) else [data, None]


@control("Merge")
def merge(node: Node, inputs: list[Any], ctx: Any) -> list[Tensor] | None:
    """The first available input, and its index."""
    for i, t in enumerate(inputs):
        if t is not None:
            return [pass_through(t), ops.scalar(i, "int32")]
    return None


@control("Enter")
def enter(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Enter the frame ``frame_name``."""
    data = _args(node, inputs, 1)[0]
    ctx.enter_frame(node.str("frame_name", "") or "")
    return pass_through(data)


@control("Exit")
def exit_(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Leave the current frame."""
    data = _args(node, inputs, 1)[0]
    ctx.exit_frame()
    return pass_through(data)


@control("NextIteration")
def next_iteration(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Move to the next iteration of the current frame."""
    data = _args(node, inputs, 1)[0]
    ctx.next_iteration()
    return pass_through(data)


@control("If", "StatelessIf")
async def if_(node: Node, inputs: list[Any], ctx: Any) -> list[Tensor]:
    """Run ``then_branch`` or ``else_branch`` on the inputs after the condition."""
    cond = _args(node, inputs, 1)[0]
    branch = node.func_name("then_branch") if await _truthy(cond) else node.func_name("else_branch")
    if branch is None:
        raise ValueError(f"graph model: node '{node.name}' ({node.op}) has no then_branch/else_branch function")
    return await ctx.call_function(branch, list(inputs[1:]))


@control("While", "StatelessWhile")
async def while_(node: Node, inputs: list[Any], ctx: Any) -> list[Tensor]:
    """Run ``body`` on the loop variables while ``cond`` holds; the last loop variables."""
    cond_fn, body_fn = node.func_name("cond"), node.func_name("body")
    if cond_fn is None or body_fn is None:
        raise ValueError(f"graph model: node '{node.name}' ({node.op}) needs 'cond' and 'body' functions")
    args = list(inputs)
    arg_ids = {t.id for t in args}

    async def check(values: list[Tensor], keep: set[int]) -> bool:
        out = await ctx.call_function(cond_fn, values)
        result = await _truthy(out[0])
        for t in out:
            if not t.kept and t.id not in keep:
                t.dispose()
        return result

    result = args
    go = await check(result, arg_ids)
    while go:
        previous = result
        result = await ctx.call_function(body_fn, result)
        result_ids = {t.id for t in result}
        for t in previous:
            if not t.kept and t.id not in arg_ids and t.id not in result_ids:
                t.dispose()
        go = await check(result, arg_ids | result_ids)
    return result


# -- TensorArray -----------------------------------------------------------------------------------


@control("TensorArrayV3")
def tensor_array_v3(node: Node, inputs: list[Any], ctx: Any) -> list[Tensor]:
    """A new TensorArray: its handle and a flow scalar."""
    size = int(_num(_args(node, inputs, 1)[0]))
    ta = TensorArray(
        node.str("tensor_array_name", "") or "",
        node.dtype("dtype", "float32") or "float32",
        size,
        node.shape("element_shape"),
        bool(node.bool("identical_element_shapes", False)),
        bool(node.bool("dynamic_size", False)),
        bool(node.bool("clear_after_read", False)),  # TF.js: false when absent
    )
    ctx.add_tensor_array(ta)
    return [ta.id_tensor, ops.scalar(1.0)]


@control("TensorArrayWriteV3")
def tensor_array_write(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Write ``value`` at ``index``; the flow output is the handle."""
    handle, index, value = _args(node, inputs, 3)[:3]
    ta = ctx.get_tensor_array(handle)
    ta.write(int(_num(index)), value)
    return ta.id_tensor


@control("TensorArrayReadV3")
def tensor_array_read(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """The element at ``index``."""
    handle, index = _args(node, inputs, 2)[:2]
    return ctx.get_tensor_array(handle).read(int(_num(index)))


@control("TensorArrayGatherV3")
def tensor_array_gather(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """The elements at ``indices``, stacked."""
    handle, indices = _args(node, inputs, 2)[:2]
    return ctx.get_tensor_array(handle).gather(_ints(indices), node.dtype("dtype"))


@control("TensorArrayScatterV3")
def tensor_array_scatter(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Write the rows of ``value`` at ``indices``."""
    handle, indices, value = _args(node, inputs, 3)[:3]
    ta = ctx.get_tensor_array(handle)
    ta.scatter(_ints(indices), value)
    return ta.id_tensor


@control("TensorArrayConcatV3")
def tensor_array_concat(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """All elements concatenated along their first axis."""
    handle = _args(node, inputs, 1)[0]
    return ctx.get_tensor_array(handle).concat(node.dtype("dtype"))


@control("TensorArraySplitV3")
def tensor_array_split(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Write consecutive pieces of ``value`` (``lengths`` rows each)."""
    handle, value, lengths = _args(node, inputs, 3)[:3]
    ta = ctx.get_tensor_array(handle)
    ta.split(_ints(lengths), value)
    return ta.id_tensor


@control("TensorArraySizeV3")
def tensor_array_size(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """The number of elements, an int32 scalar."""
    return ops.scalar(ctx.get_tensor_array(_args(node, inputs, 1)[0]).size(), "int32")


@control("TensorArrayCloseV3")
def tensor_array_close(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Free the array's tensors; the array cannot be used afterwards."""
    ta = ctx.get_tensor_array(_args(node, inputs, 1)[0])
    ta.clear_and_close()
    return ta.id_tensor


# -- TensorList ------------------------------------------------------------------------------------


def _list_dtype(node: Node) -> str:
    return node.dtype("element_dtype", "float32") or "float32"


@control("TensorListReserve", "EmptyTensorList")
def tensor_list_reserve(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """A list of ``num_elements`` empty slots (EmptyTensorList: none, at most ``max_num_elements``)."""
    shape_t, n = _args(node, inputs, 2)[:2]
    count = int(_num(n))
    if node.op == "TensorListReserve":
        tl = reserve(_shape(shape_t), _list_dtype(node), count, -1)
    else:
        tl = reserve(_shape(shape_t), _list_dtype(node), 0, count)
    ctx.add_tensor_list(tl)
    return tl.id_tensor


@control("TensorListFromTensor")
def tensor_list_from_tensor(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """A list of the rows of ``tensor``."""
    tensor, shape_t = _args(node, inputs, 2)[:2]
    tl = from_tensor(tensor, _shape(shape_t), _list_dtype(node))
    ctx.add_tensor_list(tl)
    return tl.id_tensor


@control("TensorListScatter", "TensorListScatterV2")
def tensor_list_scatter(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """A list with the rows of ``tensor`` at ``indices``."""
    tensor, indices, shape_t = _args(node, inputs, 3)[:3]
    num = int(_num(inputs[3])) if node.op == "TensorListScatterV2" and len(inputs) > 3 else None
    tl = scatter(tensor, _ints(indices), _shape(shape_t), num)
    ctx.add_tensor_list(tl)
    return tl.id_tensor


@control("TensorListSplit")
def tensor_list_split(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """A list of consecutive pieces of ``tensor`` (``lengths`` rows each)."""
    tensor, shape_t, lengths = _args(node, inputs, 3)[:3]
    tl = split(tensor, _ints(lengths), _shape(shape_t))
    ctx.add_tensor_list(tl)
    return tl.id_tensor


@control("TensorListGetItem")
def tensor_list_get_item(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """The element at ``index``."""
    handle, index, shape_t = _args(node, inputs, 3)[:3]
    return ctx.get_tensor_list(handle).get_item(int(_num(index)), _shape(shape_t), _list_dtype(node))


@control("TensorListSetItem")
def tensor_list_set_item(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Store ``item`` at ``index``; the handle."""
    handle, index, item = _args(node, inputs, 3)[:3]
    tl = ctx.get_tensor_list(handle)
    tl.set_item(int(_num(index)), item)
    return tl.id_tensor


@control("TensorListGather")
def tensor_list_gather(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """The elements at ``indices``, stacked."""
    handle, indices, shape_t = _args(node, inputs, 3)[:3]
    return ctx.get_tensor_list(handle).gather(_ints(indices), _list_dtype(node), _shape(shape_t))


@control("TensorListStack")
def tensor_list_stack(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """All elements stacked along a new first axis."""
    handle, shape_t = _args(node, inputs, 2)[:2]
    num = node.int("num_elements", -1)
    return ctx.get_tensor_list(handle).stack(_shape(shape_t), _list_dtype(node), -1 if num is None else num)


@control("TensorListConcat", "TensorListConcatV2")
def tensor_list_concat(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """All elements concatenated along their first axis."""
    handle = _args(node, inputs, 1)[0]
    return ctx.get_tensor_list(handle).concat(_list_dtype(node), node.shape("element_shape"))


@control("TensorListPushBack")
def tensor_list_push_back(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Append ``tensor``; the handle."""
    handle, item = _args(node, inputs, 2)[:2]
    tl = ctx.get_tensor_list(handle)
    tl.push_back(item)
    return tl.id_tensor


@control("TensorListPopBack")
def tensor_list_pop_back(node: Node, inputs: list[Any], ctx: Any) -> list[Tensor]:
    """Remove the last element: the handle and the element."""
    handle, shape_t = _args(node, inputs, 2)[:2]
    tl = ctx.get_tensor_list(handle)
    return [tl.id_tensor, tl.pop_back(_shape(shape_t), _list_dtype(node))]


@control("TensorListLength")
def tensor_list_length(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """The number of elements, an int32 scalar."""
    return ops.scalar(ctx.get_tensor_list(_args(node, inputs, 1)[0]).size(), "int32")


@control("TensorListResize")
def tensor_list_resize(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """A new list of ``size`` slots with this list's first elements."""
    handle, size = _args(node, inputs, 2)[:2]
    tl = ctx.get_tensor_list(handle).resize(int(_num(size)))
    ctx.add_tensor_list(tl)
    return tl.id_tensor
