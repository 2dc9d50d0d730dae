"""deeplearn.js 0.x for Python, with its original camelCase names (``import ndflow.legacy as dl``).

The one place in ndflow where names are not snake_case: code written for deeplearn.js ports by
changing syntax only. It runs on ndflow's engine (tensors, ``tidy``, variables, autodiff and
optimizers are the modern ones), so legacy arrays and ``nf`` ops mix freely::

    math = dl.NDArrayMathCPU()
    a = dl.Array1D.new([1, 2, 3])
    mse = math.scope(lambda keep, track: math.mean(math.square(math.sub(a, a))))
"""

from __future__ import annotations

from . import math_extra  # noqa: F401  (adds math.copy2D and math.elementWiseMulBroadcast)
from .checkpoint_loader import CheckpointLoader
from .dataset import InMemoryDataset
from .environment import ENV, Environment
from .graph import (
    ConstantInitializer,
    ConstantNode,
    Graph,
    GraphLayers,
    Initializer,
    Node,
    OnesInitializer,
    OpNode,
    PlaceholderNode,
    RandomNormalInitializer,
    RandomTruncatedNormalInitializer,
    RandomUniformInitializer,
    SymbolicTensor,
    TensorInitializer,
    VariableNode,
    VarianceScalingInitializer,
    ZerosInitializer,
)
from .input_provider import (
    InCPUMemoryShuffledInputProviderBuilder,
    InGPUMemoryShuffledInputProviderBuilder,
    InMemoryShuffledInputProviderBuilder,
    InputProvider,
)
from .math import MatrixOrientation, NDArrayMath, NDArrayMathCPU, NDArrayMathGPU
from .ndarray import (
    Array1D,
    Array2D,
    Array3D,
    Array4D,
    LegacyVariable,
    NDArray,
    Scalar,
    Tensor1D,
    Tensor2D,
    Tensor3D,
    Tensor4D,
    randNormal,
    to_legacy,
    variable,
)
from .optimizers import (
    AdadeltaOptimizer,
    AdagradOptimizer,
    AdamaxOptimizer,
    AdamOptimizer,
    MomentumOptimizer,
    RMSPropOptimizer,
    SGDOptimizer,
)
from .session import CostReduction, FeedEntry, Session

__all__ = [
    "NDArray", "Scalar", "Array1D", "Array2D", "Array3D", "Array4D", "Tensor1D", "Tensor2D", "Tensor3D",
    "Tensor4D", "LegacyVariable", "randNormal", "variable", "to_legacy",
    "NDArrayMath", "NDArrayMathCPU", "NDArrayMathGPU", "MatrixOrientation",
    "Graph", "GraphLayers", "SymbolicTensor", "Node", "OpNode", "VariableNode", "PlaceholderNode", "ConstantNode",
    "Initializer", "VarianceScalingInitializer", "ZerosInitializer", "OnesInitializer", "ConstantInitializer",
    "TensorInitializer", "RandomNormalInitializer", "RandomTruncatedNormalInitializer", "RandomUniformInitializer",
    "Session", "FeedEntry", "CostReduction",
    "InputProvider", "InMemoryShuffledInputProviderBuilder", "InCPUMemoryShuffledInputProviderBuilder",
    "InGPUMemoryShuffledInputProviderBuilder",
    "SGDOptimizer", "MomentumOptimizer", "AdagradOptimizer", "AdadeltaOptimizer", "AdamOptimizer",
    "AdamaxOptimizer", "RMSPropOptimizer",
    "CheckpointLoader", "InMemoryDataset", "ENV", "Environment",
]  # fmt: skip
