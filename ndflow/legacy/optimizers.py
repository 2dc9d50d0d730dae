"""deeplearn.js 0.5's optimizers: ndflow's, with deeplearn's constructor arguments and camelCase methods.

Each takes ``specifiedVariableList`` (graph variable nodes) where deeplearn.js did: a
``Session`` then trains only those variables. The update rules are ndflow's (TF.js's), which are
the rules deeplearn.js 0.5 used; the session averages the gradient over the batch as deeplearn.js
did (``-learningRate / batchSize`` times the summed gradient).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .. import train
from ..core.tensor import Tensor, Variable
from ..gradients.api import VariableGrads


class _Legacy:
    """The camelCase methods every legacy optimizer adds to its ndflow optimizer."""

    specifiedVariableList: list[Any] | None  # noqa: N815 - deeplearn.js's name

    def minimize(  # type: ignore[override]
        self, f: Callable[[], Tensor], returnCost: bool = False, varList: Sequence[Variable] | None = None
    ) -> Tensor | None:
        """Take one step that lowers the scalar ``f()``; the cost if ``returnCost``."""
        from .ndarray import to_legacy

        return to_legacy(train.Optimizer.minimize(self, f, returnCost, varList))  # type: ignore[arg-type]

    def computeGradients(self, f: Callable[[], Tensor], varList: Sequence[Variable] | None = None) -> VariableGrads:
        """``(value, grads)`` of the scalar ``f()`` by variable name."""
        return self.compute_gradients(f, varList)  # type: ignore[attr-defined]

    def applyGradients(self, variableGradients: Mapping[str, Tensor]) -> None:
        """Update the variables named in ``variableGradients``."""
        self.apply_gradients(variableGradients)  # type: ignore[attr-defined]

    @property
    def learningRate(self) -> float:
        """The learning rate."""
        return self.learning_rate  # type: ignore[attr-defined]


class SGDOptimizer(_Legacy, train.SGDOptimizer):
    """Stochastic gradient descent: ``SGDOptimizer(learningRate, specifiedVariableList?)``."""

    def __init__(self, learningRate: float, specifiedVariableList: list[Any] | None = None) -> None:
        train.SGDOptimizer.__init__(self, learningRate)
        self.specifiedVariableList = specifiedVariableList

    def setLearningRate(self, learningRate: float) -> None:
        """Change the learning rate used by the next steps."""
        self.set_learning_rate(learningRate)


class MomentumOptimizer(_Legacy, train.MomentumOptimizer):
    """``MomentumOptimizer(learningRate, momentum, specifiedVariableList?, useNesterov?)``."""

    def __init__(
        self,
        learningRate: float,
        momentum: float,
        specifiedVariableList: list[Any] | None = None,
        useNesterov: bool = False,
    ) -> None:
        train.MomentumOptimizer.__init__(self, learningRate, momentum, useNesterov)
        self.specifiedVariableList = specifiedVariableList

    def setLearningRate(self, learningRate: float) -> None:
        """Change the learning rate used by the next steps."""
        self.set_learning_rate(learningRate)

    def setMomentum(self, momentum: float) -> None:
        """Change the momentum."""
        self.set_momentum(momentum)


class AdagradOptimizer(_Legacy, train.AdagradOptimizer):
    """``AdagradOptimizer(learningRate, specifiedVariableList?, initialAccumulatorValue=0.1)``."""

    def __init__(
        self, learningRate: float, specifiedVariableList: list[Any] | None = None, initialAccumulatorValue: float = 0.1
    ) -> None:
        train.AdagradOptimizer.__init__(self, learningRate, initialAccumulatorValue)
        self.specifiedVariableList = specifiedVariableList


class AdadeltaOptimizer(_Legacy, train.AdadeltaOptimizer):
    """``AdadeltaOptimizer(learningRate, rho, specifiedVariableList?, epsilon=1e-8)``."""

    def __init__(
        self, learningRate: float, rho: float, specifiedVariableList: list[Any] | None = None, epsilon: float = 1e-8
    ) -> None:
        train.AdadeltaOptimizer.__init__(self, learningRate, rho, epsilon)
        self.specifiedVariableList = specifiedVariableList


class AdamOptimizer(_Legacy, train.AdamOptimizer):
    """``AdamOptimizer(learningRate, beta1, beta2, epsilon=1e-8, specifiedVariableList?)``."""

    def __init__(
        self,
        learningRate: float,
        beta1: float,
        beta2: float,
        epsilon: float = 1e-8,
        specifiedVariableList: list[Any] | None = None,
    ) -> None:
        train.AdamOptimizer.__init__(self, learningRate, beta1, beta2, epsilon)
        self.specifiedVariableList = specifiedVariableList


class AdamaxOptimizer(_Legacy, train.AdamaxOptimizer):
    """``AdamaxOptimizer(learningRate, beta1, beta2, epsilon=1e-8, decay=0, specifiedVariableList?)``."""

    def __init__(
        self,
        learningRate: float,
        beta1: float,
        beta2: float,
        epsilon: float = 1e-8,
        decay: float = 0.0,
        specifiedVariableList: list[Any] | None = None,
    ) -> None:
        train.AdamaxOptimizer.__init__(self, learningRate, beta1, beta2, epsilon, decay)
        self.specifiedVariableList = specifiedVariableList


class RMSPropOptimizer(_Legacy, train.RMSPropOptimizer):
    """``RMSPropOptimizer(learningRate, decay=0.9, momentum=0, specifiedVariableList?, epsilon=1e-8)``."""

    def __init__(
        self,
        learningRate: float,
        decay: float = 0.9,
        momentum: float = 0.0,
        specifiedVariableList: list[Any] | None = None,
        epsilon: float = 1e-8,
    ) -> None:
        train.RMSPropOptimizer.__init__(self, learningRate, decay, momentum, epsilon)
        self.specifiedVariableList = specifiedVariableList
