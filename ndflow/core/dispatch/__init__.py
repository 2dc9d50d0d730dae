"""Kernel dispatch, in one place: how a kernel call becomes tensors.

- ``outputs.py`` — :func:`~ndflow.core.dispatch.outputs.track_output`, the specification of output
  bookkeeping (the output tensor, its data's entry and the memory counters, scope and leak tracking), used by
  every Python path and mirrored by the C module;
- ``run_kernel.py`` — ``Engine.run_kernel`` and its variants (plain, listed by ``record_calls``, taped);
- ``direct_path.py`` — the float32 element-wise fast path (``run_unary_float``, ``run_binary_float``...);
- ``compiled.py`` — the Python side of the C module (``csrc/``, module ``ndflow.core.dispatch._dispatch``),
  which does the plain cases of all of the above in C.

:class:`~ndflow.core.engine.Engine` mixes in the dispatch classes; its state (backends, scopes, counters)
lives on the engine.
"""
