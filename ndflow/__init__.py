"""ndflow: TensorFlow.js (and deeplearn.js) for Python. ``import ndflow as nf``.

``import ndflow`` imports no optional library (torch, wgpu, numba), nor the Layers API, model I/O and graph-model
converter, ``nf.data``, ``nf.node`` and ``nf.browser``: each loads on first use (``nf.sequential``, ``nf.io``,
``nf.load_graph_model``, the first op on a backend). ``benchmarks/import_time.py`` times it.
"""

import importlib
from typing import TYPE_CHECKING, Any

from . import (
    backends,  # noqa: F401  (registers the backends)
    ops,
    train,
)
from .core import dtypes
from .core import types as types
from .core.backend import Backend
from .core.dtypes import upcast_type
from .core.flags import env
from .core.globals import (
    backend,
    copy_registered_kernels,
    deprecation_warn,
    disable_deprecation_warnings,
    dispose,
    dispose_variables,
    enable_debug_mode,
    enable_prod_mode,
    engine,
    expect_no_leaks,
    find_backend,
    find_backend_factory,
    get_backend,
    keep,
    leaks,
    memory,
    next_frame,
    op,
    print_,
    profile,
    ready,
    register_backend,
    remove_backend,
    set_backend,
    set_platform,
    tidy,
    time,
)
from .core.kernel_registry import (
    get_gradient,
    get_kernel,
    get_kernels_for_backend,
    register_direct,
    register_direct_product,
    register_direct_reduction,
    register_gradient,
    register_kernel,
    register_shared_output,
    unregister_gradient,
    unregister_kernel,
)
from .core.leaks import LeakError, LeakReport
from .core.profiler import ComputationError
from .core.scope_context import TensorScope, scope
from .core.tensor import DisposedTensorError, Tensor, Variable
from .core.tensor_buffer import TensorBuffer
from .gradients import custom_grad, grad, grads, value_and_grad, value_and_grads, variable_grads
from .ops import *  # noqa: F403
from .ops import __all__ as _ops_all
from .train import (
    AdadeltaOptimizer,
    AdagradOptimizer,
    AdamaxOptimizer,
    AdamOptimizer,
    MomentumOptimizer,
    Optimizer,
    RMSPropOptimizer,
    SGDOptimizer,
)
from .version import __version__

if TYPE_CHECKING:  # loaded on first access (below); named here for type checkers and linters
    from . import browser, converter, data, io, layers, node, vis  # noqa: F401
    from .converter import GraphModel, load_graph_model, load_graph_model_async
    from .layers import (
        InputSpec,
        LayersModel,
        LayerVariable,
        Sequential,
        SymbolicTensor,
        callbacks,
        constraints,
        initializers,
        load_layers_model,
        load_layers_model_async,
        metrics,
        model,
        regularizers,
        sequential,
        serialization,
    )
    from .layers import input as input
    from .ops import _exports
    from .ops._exports import *  # noqa: F403  (the ops and op namespaces ndflow.ops adds at import time)

# TF.js's op namespaces: nf.image, nf.linalg, nf.losses, ... (families named after them)
for _namespace in ops.NAMESPACES & ops.families.keys():
    globals()[_namespace] = ops.families[_namespace]


def buffer(shape: list[int] | tuple[int, ...], dtype: str = "float32", values: object = None) -> TensorBuffer:
    """A mutable ``TensorBuffer`` to fill and turn into a tensor with ``to_tensor()``."""
    from .ops.convert import check_shape, to_array

    shape, dtype = check_shape(shape, "buffer"), dtypes.check_dtype(dtype, "buffer")
    return TensorBuffer(shape, dtype, None if values is None else to_array(values, dtype, "buffer"))


# Loaded on first access (PEP 562), so that `import ndflow` stays light: name -> (submodule, attribute or None
# for the submodule itself).
_LAZY: dict[str, tuple[str, str | None]] = {
    "converter": ("converter", None), "GraphModel": ("converter", "GraphModel"),
    "load_graph_model": ("converter", "load_graph_model"),
    "load_graph_model_async": ("converter", "load_graph_model_async"),
    "load_layers_model_async": ("layers", "load_layers_model_async"),
    "io": ("io", None), "layers": ("layers", None), "data": ("data", None), "node": ("node", None),
    "browser": ("browser", None), "vis": ("vis", None), "util": ("core.util", None),
    "serving": ("serving", None), "distributed": ("distributed", None),
    "models": ("layers.model_json", None),
    **{name: ("converter.custom_op", name) for name in ("register_op", "deregister_op", "get_registered_op")},
    **{name: ("layers", name) for name in (
        "InputSpec", "LayersModel", "LayerVariable", "Sequential", "SymbolicTensor", "callbacks", "constraints",
        "initializers", "load_layers_model", "metrics", "model", "regularizers", "sequential", "serialization",
        "input",  # nf.input; left out of __all__ so `import *` keeps the builtin
    )},
}  # fmt: skip


if not TYPE_CHECKING:  # type checkers see the lazy names above, not an Any for every unknown name

    def __getattr__(name: str) -> Any:
        if name not in _LAZY:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        module_name, attribute = _LAZY[name]
        module = importlib.import_module(f"{__name__}.{module_name}")
        value = module if attribute is None else getattr(module, attribute)
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


print = print_  # nf.print(x) as tf.print(x); left out of __all__ so `import *` keeps the builtin

__all__ = [
    "Backend", "ComputationError", "DisposedTensorError", "Tensor", "TensorBuffer", "Variable", "__version__",
    "backend", "buffer", "disable_deprecation_warnings", "dispose", "dispose_variables", "dtypes",
    "enable_debug_mode", "enable_prod_mode", "engine", "env", "find_backend", "get_backend", "get_gradient",
    "get_kernel", "get_kernels_for_backend", "keep", "memory", "next_frame", "profile", "ready",
    "register_backend", "register_direct", "register_direct_product", "register_direct_reduction",
    "register_gradient", "register_kernel",
    "register_shared_output", "remove_backend",
    "set_backend", "tidy", "time",
    "upcast_type", "copy_registered_kernels", "deprecation_warn", "find_backend_factory", "op", "set_platform",
    "unregister_gradient", "unregister_kernel",
    "layers", "initializers", "regularizers", "constraints", "serialization", "sequential", "model",
    "Sequential", "LayersModel", "SymbolicTensor", "LayerVariable", "InputSpec",
    "GraphModel", "load_graph_model", "load_layers_model", "load_graph_model_async", "load_layers_model_async",
    "callbacks", "metrics", "io", "data", "node", "browser", "vis",
    "LeakError", "LeakReport", "expect_no_leaks", "leaks", "scope", "TensorScope",
    "train", "Optimizer", "SGDOptimizer", "MomentumOptimizer", "AdagradOptimizer", "AdadeltaOptimizer",
    "AdamOptimizer", "AdamaxOptimizer", "RMSPropOptimizer",
    "custom_grad", "grad", "grads", "value_and_grad", "value_and_grads", "variable_grads",
    *_ops_all,
]  # fmt: skip
if TYPE_CHECKING:  # the names above that type checkers cannot read from *_ops_all
    __all__ += _exports.__all__
