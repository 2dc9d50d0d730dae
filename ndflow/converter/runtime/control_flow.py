"""Execution state of a graph model run: control-flow frames, TensorArrays, TensorLists, hash tables.

Frames work as TF.js's ``ExecutionContext``: a run starts in the root frame; ``Enter`` pushes a frame
(named by its ``frame_name``), ``NextIteration`` moves to the next iteration of the innermost frame,
``Exit`` pops it. Each node's tensors are stored under ``name`` plus the id of the frame stack it ran
in (``"while/add-/while-2"``), and a node reads its inputs from its own frame or the nearest outer one
that has them, so that a loop body sees loop invariants computed outside the loop.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ...core.tensor import Tensor


class LibraryFunction(Protocol):
    """What ``ctx.call_function`` runs: a model's library function (``If``/``While`` bodies). The executor
    passes its function executors in; this module never imports the executor."""

    async def execute_function_async(
        self, args: Sequence[Tensor], tensor_arrays: dict[int, Any], tensor_lists: dict[int, Any]
    ) -> list[Tensor]:
        """Run the function on positional ``args``, sharing the caller's TensorArrays and TensorLists."""
        ...


@dataclass(frozen=True)
class Frame:
    """One level of the frame stack: a unique ``id``, the loop's ``name`` and its ``iteration``."""

    id: int
    name: str
    iteration: int

    @property
    def key(self) -> str:
        """This level's part of a context id ('' for the root)."""
        return "" if self.id == 0 and self.iteration == 0 else f"{self.name}-{self.iteration}"


ROOT = (Frame(0, "", 0),)


class ResourceManager:
    """The model's hash tables, shared by its graph and its initializer (TF.js ``ResourceManager``).

    A table is any object with a kept scalar ``handle`` tensor; the table is found by the name of the
    node that made it or by its handle's id; ``dispose()`` closes every table (``clear_and_close()``
    when it has one) and frees the handles."""

    def __init__(self) -> None:
        self.name_to_handle: dict[str, Tensor] = {}
        self.tables: dict[int, Any] = {}

    def add_hash_table(self, name: str, table: Any) -> None:
        """Register a table made by node ``name``."""
        self.name_to_handle[name] = table.handle
        self.tables[table.handle.id] = table

    def get_hash_table_handle_by_name(self, name: str) -> Tensor | None:
        """The handle of the table node ``name`` made, or None."""
        return self.name_to_handle.get(name)

    def get_hash_table_by_id(self, handle_id: int) -> Any:
        """The table whose handle tensor has this id, or None."""
        return self.tables.get(handle_id)

    def dispose(self) -> None:
        """Close every table and free its handle."""
        for table in self.tables.values():
            close = getattr(table, "clear_and_close", None) or getattr(table, "dispose", None)
            if close is not None:
                close()
        for handle in self.name_to_handle.values():
            handle.dispose()
        self.tables.clear()
        self.name_to_handle.clear()


class ExecutionContext:
    """What a mapper may use besides its inputs: weights, frames, TensorArrays/TensorLists, the model's
    functions (``await ctx.call_function(name, args)``) and hash tables (``ctx.resources``)."""

    def __init__(
        self,
        weights: dict[str, Tensor],
        tensor_arrays: dict[int, Any] | None = None,
        tensor_lists: dict[int, Any] | None = None,
        functions: dict[str, LibraryFunction] | None = None,
        resources: ResourceManager | None = None,
    ) -> None:
        self.weights = weights
        self.tensor_arrays: dict[int, Any] = {} if tensor_arrays is None else tensor_arrays
        self.tensor_lists: dict[int, Any] = {} if tensor_lists is None else tensor_lists
        self.functions: dict[str, LibraryFunction] = functions or {}
        self.resources = resources if resources is not None else ResourceManager()
        self.last_id = 0
        self._frames: tuple[Frame, ...] = ROOT
        self._ids: list[str] = [""]

    # -- frames ----------------------------------------------------------------------------------
    @property
    def frames(self) -> tuple[Frame, ...]:
        """The current frame stack (immutable; saved with each scheduled node)."""
        return self._frames

    @frames.setter
    def frames(self, frames: tuple[Frame, ...]) -> None:
        """Switch to a saved frame stack."""
        if frames is not self._frames:
            self._frames = frames
            self._ids = self._context_ids(frames)

    @staticmethod
    def _context_ids(frames: tuple[Frame, ...]) -> list[str]:
        ids = ["/".join(f.key for f in frames[: len(frames) - i]) for i in range(len(frames) - 1)]
        ids.append("")
        return ids

    @property
    def current_context_id(self) -> str:
        """Id of the current frame stack ('' at the root)."""
        return self._ids[0]

    @property
    def current_context_ids(self) -> list[str]:
        """Ids of the current frame stack and of each outer one, innermost first, ending with ''."""
        return self._ids

    def key(self, name: str, context_id: str | None = None) -> str:
        """The tensor-map key of node ``name`` in a frame stack (the current one by default)."""
        cid = self._ids[0] if context_id is None else context_id
        return f"{name}-{cid}" if cid else name

    def enter_frame(self, frame_name: str) -> None:
        """Push a new frame (``Enter``)."""
        self.last_id += 1
        self.frames = (*self._frames, Frame(self.last_id, frame_name, 0))

    def exit_frame(self) -> None:
        """Pop the innermost frame (``Exit``)."""
        if len(self._frames) <= 1:
            raise RuntimeError("graph model: Exit outside any frame (the graph's Enter/Exit nodes do not match)")
        self.frames = self._frames[:-1]

    def next_iteration(self) -> None:
        """Move the innermost frame to its next iteration (``NextIteration``)."""
        if len(self._frames) <= 1:
            raise RuntimeError("graph model: NextIteration outside any frame (no Enter before it)")
        self.last_id += 1
        last = self._frames[-1]
        self.frames = (*self._frames[:-1], Frame(self.last_id, last.name, last.iteration + 1))

    # -- state -----------------------------------------------------------------------------------
    def add_tensor_array(self, tensor_array: Any) -> None:
        """Register a TensorArray under its id tensor."""
        self.tensor_arrays[tensor_array.id] = tensor_array

    def get_tensor_array(self, handle: Tensor) -> Any:
        """The TensorArray whose id tensor is ``handle``."""
        found = self.tensor_arrays.get(handle.id)
        if found is None:
            raise ValueError(f"graph model: no TensorArray has the handle tensor {handle.id}")
        return found

    def add_tensor_list(self, tensor_list: Any) -> None:
        """Register a TensorList under its id tensor."""
        self.tensor_lists[tensor_list.id] = tensor_list

    def get_tensor_list(self, handle: Tensor) -> Any:
        """The TensorList whose id tensor is ``handle``."""
        found = self.tensor_lists.get(handle.id)
        if found is None:
            raise ValueError(f"graph model: no TensorList has the handle tensor {handle.id}")
        return found

    def get_weight(self, name: str) -> Tensor | None:
        """The weight of a ``Const`` node, or None."""
        return self.weights.get(name)

    async def call_function(self, name: str, args: list[Tensor]) -> list[Tensor]:
        """Run the library function ``name`` on ``args`` (sharing TensorArrays/TensorLists)."""
        fn = self.functions.get(name)
        if fn is None:
            raise ValueError(f"graph model: no library function named '{name}' (have: {sorted(self.functions)})")
        return await fn.execute_function_async(args, self.tensor_arrays, self.tensor_lists)

    def dispose(self, keep_ids: set[int]) -> None:
        """Close every TensorArray and TensorList, freeing their tensors except those in ``keep_ids``."""
        for ta in list(self.tensor_arrays.values()):
            ta.clear_and_close(keep_ids)
        for tl in list(self.tensor_lists.values()):
            tl.clear_and_close(keep_ids)
        self.tensor_arrays.clear()
        self.tensor_lists.clear()
