"""deeplearn.js's input providers: shuffled examples that stay in sync across several inputs.

``InCPUMemoryShuffledInputProviderBuilder([inputs, labels]).getInputProviders()`` gives one
provider per input; each ``getNextCopy()`` returns a new array for the next example (in the same
shuffled order for every input) that the session disposes with ``disposeCopy``. The CPU builder
keeps the examples as numpy arrays in host memory and uploads each copy; the GPU builder keeps
them as tensors on the active backend and clones them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from .. import ops
from ..core.globals import keep
from ..core.tensor import Tensor
from .ndarray import to_legacy


class InputProvider(Protocol):
    """What a feed entry's ``data`` may be besides an array: a source of per-example copies."""

    def getNextCopy(self) -> Tensor:
        """A new array holding the next example."""
        ...

    def disposeCopy(self, copy: Tensor) -> None:
        """Release an array ``getNextCopy`` returned."""
        ...


def _examples(examples: Any, i: int) -> list[Any]:
    """One input's examples: a list of arrays (NDArrays, numpy arrays, nested lists) or a stacked array."""
    if isinstance(examples, Tensor):
        return [examples.numpy()[j] for j in range(examples.shape[0])]
    if isinstance(examples, np.ndarray):
        return list(examples)
    if not isinstance(examples, Sequence) or isinstance(examples, str):
        raise TypeError(f"inputs[{i}] must be a list of examples, got {type(examples).__name__}")
    return list(examples)


class InMemoryShuffledInputProviderBuilder:
    """Examples of several inputs, visited in one shuffled order shared by all of them."""

    def __init__(self, inputs: Sequence[Any], seed: int | None = None) -> None:
        if not inputs:
            raise ValueError("InputProviderBuilder: inputs must hold at least one input")
        self.inputs = [_examples(x, i) for i, x in enumerate(inputs)]
        self.numInputs = len(self.inputs)
        count = len(self.inputs[0])
        if count == 0:
            raise ValueError("InputProviderBuilder: inputs must hold at least one example")
        for i, examples in enumerate(self.inputs):
            if len(examples) != count:
                raise ValueError(
                    f"Number of examples must match across different inputs: input 0 has {count}, "
                    f"input {i} has {len(examples)}"
                )
            shape = tuple(np.shape(examples[0]))
            for j, example in enumerate(examples):
                if tuple(np.shape(example) if not isinstance(example, Tensor) else example.shape) != shape:
                    raise ValueError(f"input {i}: example {j} does not have the shape {list(shape)} of example 0")
        self.shuffledIndices = np.random.default_rng(seed).permutation(count)
        self.idx = 0
        self.inputCounter = 0
        self.epoch = 0

    def getCurrentExampleIndex(self) -> int:
        """The example the next input read gets; every input reads it once before the next one."""
        index = self.idx
        self.inputCounter += 1
        if self.inputCounter >= self.numInputs:
            self.idx += 1
            self.inputCounter = 0
            if self.idx >= len(self.inputs[0]):
                self.idx = 0
                self.epoch += 1
        return index

    def getNextInput(self, inputId: int) -> Any:
        """The next example of input ``inputId``."""
        return self.inputs[inputId][self.shuffledIndices[self.getCurrentExampleIndex()]]

    def getEpoch(self) -> int:
        """How many times every example has been visited."""
        return self.epoch

    def getInputProviders(self) -> list[InputProvider]:
        """One provider per input, in the order of ``inputs``."""
        return [self.getInputProvider(i) for i in range(self.numInputs)]

    def getInputProvider(self, inputId: int) -> InputProvider:
        """The provider of input ``inputId``."""
        raise NotImplementedError(f"{type(self).__name__}.getInputProvider")


class _Provider:
    def __init__(self, builder: InMemoryShuffledInputProviderBuilder, inputId: int, on_host: bool) -> None:
        self.builder, self.inputId, self.on_host = builder, inputId, on_host

    def getNextCopy(self) -> Tensor:
        example = self.builder.getNextInput(self.inputId)
        if self.on_host:
            return to_legacy(ops.tensor(example))
        return to_legacy(ops.clone(example))

    def disposeCopy(self, copy: Tensor) -> None:
        copy.dispose()


class InCPUMemoryShuffledInputProviderBuilder(InMemoryShuffledInputProviderBuilder):
    """Examples kept as numpy arrays in host memory; each copy is uploaded to the active backend."""

    def __init__(self, inputs: Sequence[Any], seed: int | None = None) -> None:
        super().__init__(inputs, seed)
        self.inputs = [[_host(x) for x in examples] for examples in self.inputs]

    def getInputProvider(self, inputId: int) -> InputProvider:
        """The provider of input ``inputId``."""
        return _Provider(self, inputId, on_host=True)


class InGPUMemoryShuffledInputProviderBuilder(InMemoryShuffledInputProviderBuilder):
    """Examples kept as tensors on the backend (the caller's arrays, or ones this builder made); copies are clones.

    Arrays the builder made from numpy data are the builder's: free them with ``dispose()``.
    """

    def __init__(self, inputs: Sequence[Any], seed: int | None = None) -> None:
        super().__init__(inputs, seed)
        self._owned: list[Tensor] = []
        converted = []
        for examples in self.inputs:
            row = []
            for x in examples:
                if not isinstance(x, Tensor):
                    x = keep(ops.tensor(_host(x)))
                    self._owned.append(x)
                row.append(x)
            converted.append(row)
        self.inputs = converted

    def getInputProvider(self, inputId: int) -> InputProvider:
        """The provider of input ``inputId``."""
        return _Provider(self, inputId, on_host=False)

    def dispose(self) -> None:
        """Dispose the arrays this builder made (arrays it was given stay the caller's)."""
        for t in self._owned:
            t.dispose()
        self._owned = []


def _host(x: Any) -> np.ndarray:
    values = x.numpy() if isinstance(x, Tensor) else np.asarray(x)
    return values.astype(np.float32) if values.dtype == np.float64 else values
