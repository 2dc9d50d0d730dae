"""Running stage of the converter: a loaded (and optimized) graph executed on ndflow ops.

- ``executor``: :class:`~ndflow.converter.runtime.executor.GraphExecutor`, ``execute`` (a precomputed plan)
  and ``execute_async`` (control flow, dynamic ops);
- ``program``: a plan compiled into a tight loop of steps; ``replay`` (a node's one kernel call repeated) and
  ``shape_cache`` (shape-only steps computed once per input shape) make its steps cheaper;
- ``async_plan`` (the static part of an ``execute_async`` run), ``islands`` (plain nodes after the dynamic ops,
  compiled in groups) and ``scheduler`` (the rest, node by node as inputs become ready);
- ``control_flow``: the execution context (frames, TensorArrays/TensorLists, hash tables, library functions);
  ``tensor_array`` and ``tensor_list``: the loop state the control-flow mappers make;
- ``constants``: the values of a model's constants that the mappers read, remembered.

Depends on ``load`` only: the mappers are found through ``load.registry``, and the executor hands the
execution context its library functions (``control_flow.LibraryFunction``), so nothing here imports
``mappers``, ``passes`` or the executor from below it.
"""
