"""deeplearn.js 0.x's ``InMemoryDataset``: a base class for datasets held as lists of ``NDArray`` examples.

A subclass implements ``fetchData`` (a coroutine, as deeplearn.js's returned a Promise) to fill ``self.dataset``
with one list of examples per data index (e.g. ``[inputs, labels]``). The base class gives shapes, stats and
per-dimension min/max normalization into a range and back, as deeplearn.js's did; the arrays a normalization
replaces are disposed (deeplearn.js left them to the caller).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import util
from ..core.tensor import Tensor
from .ndarray import NDArray

STATS_SAMPLE_PERCENTAGE = 0.1

Bounds = np.ndarray | float


class InMemoryDataset:
    """Examples in memory, ``dataset[dataIndex][exampleIndex]``, with normalization helpers."""

    def __init__(self, dataShapes: list[list[int]]) -> None:  # noqa: N803 - deeplearn.js's names
        self.dataShapes = [list(s) for s in dataShapes]
        self.dataset: list[list[Tensor]] | None = None
        self._normalization: dict[int, dict[str, Any]] = {}

    def getDataShape(self, dataIndex: int) -> list[int]:  # noqa: N802, N803
        """The shape of one example of data index ``dataIndex``."""
        return self.dataShapes[dataIndex]

    async def fetchData(self) -> None:  # noqa: N802
        """Fill ``self.dataset``; subclasses implement it."""
        raise NotImplementedError(f"{type(self).__name__}.fetchData: subclasses of InMemoryDataset implement it")

    def getData(self) -> list[list[Tensor]] | None:  # noqa: N802
        """The examples, one list per data index (``None`` before ``fetchData``)."""
        return self.dataset

    def _data(self, what: str = "Data is null.") -> list[list[Tensor]]:
        if self.dataset is None:
            raise RuntimeError(f"InMemoryDataset: {what} (call fetchData first)")
        return self.dataset

    def getStats(self) -> list[dict[str, Any]]:  # noqa: N802
        """Per data index: ``exampleCount``, ``inputMin``/``inputMax`` over a random 90% sample of the examples (as
        deeplearn.js sampled), and ``shape`` of an example."""
        return [self._stats(examples) for examples in self._data()]

    def _stats(self, examples: list[Tensor]) -> dict[str, Any]:
        order = list(range(len(examples)))
        util.shuffle(order)
        sample = order[int(len(order) * STATS_SAMPLE_PERCENTAGE) :]
        low, high = float("inf"), float("-inf")
        for i in sample:
            values = examples[i].data_sync()
            if values.size:
                low, high = min(low, float(values.min())), max(high, float(values.max()))
        return {"inputMin": low, "inputMax": high, "exampleCount": len(examples), "shape": list(examples[0].shape)}

    def _normalize_examples(
        self, examples: list[Tensor], cur_low: Bounds, cur_high: Bounds, new_low: Bounds, new_high: Bounds
    ) -> list[Tensor]:
        out = []
        for example in examples:
            values = example.data_sync().astype(np.float64)
            cur_range = np.asarray(cur_high, np.float64) - np.asarray(cur_low, np.float64)
            new_range = np.asarray(new_high, np.float64) - np.asarray(new_low, np.float64)
            with np.errstate(divide="ignore", invalid="ignore"):
                scaled = new_low + new_range * (values - cur_low) / cur_range
            scaled = np.where(cur_range == 0, np.broadcast_to(new_low, values.shape), scaled)
            out.append(NDArray.make(list(example.shape), {"values": scaled.astype(np.float32)}, "float32"))
        return out

    def _replace(self, dataIndex: int, examples: list[Tensor]) -> None:  # noqa: N803
        data = self._data()
        for old in data[dataIndex]:
            old.dispose()
        data[dataIndex] = examples

    def _bounds(self, dataIndex: int) -> dict[str, Any]:  # noqa: N803
        if dataIndex not in self._normalization:
            stacked = np.stack([e.data_sync().astype(np.float32) for e in self._data()[dataIndex]])
            self._normalization[dataIndex] = {
                "isNormalized": False,
                "minValues": stacked.min(axis=0),
                "maxValues": stacked.max(axis=0),
            }
        return self._normalization[dataIndex]

    def normalizeWithinBounds(self, dataIndex: int, lowerBound: float, upperBound: float) -> None:  # noqa: N802, N803
        """Scale each dimension of data index ``dataIndex`` linearly into ``[lowerBound, upperBound]`` (from its
        min/max over the examples, or from the previous normalization's range)."""
        data = self._data()
        if dataIndex >= len(data):
            raise IndexError(f"normalizeWithinBounds: dataIndex {dataIndex} out of bounds ({len(data)} data indices)")
        info = self._bounds(dataIndex)
        if info["isNormalized"]:
            cur_low, cur_high = info["lowerBound"], info["upperBound"]
        else:
            cur_low, cur_high = info["minValues"], info["maxValues"]
        self._replace(dataIndex, self._normalize_examples(data[dataIndex], cur_low, cur_high, lowerBound, upperBound))
        info.update(isNormalized=True, lowerBound=lowerBound, upperBound=upperBound)

    def _is_normalized(self, dataIndex: int) -> bool:  # noqa: N803
        return bool(self._normalization.get(dataIndex, {}).get("isNormalized"))

    def removeNormalization(self, dataIndex: int) -> None:  # noqa: N802, N803
        """Undo ``normalizeWithinBounds`` (back to the original per-dimension ranges)."""
        data = self._data("Training or test data is null.")
        if not self._is_normalized(dataIndex):
            return
        info = self._normalization[dataIndex]
        restored = self._normalize_examples(
            data[dataIndex], info["lowerBound"], info["upperBound"], info["minValues"], info["maxValues"]
        )
        self._replace(dataIndex, restored)
        info["isNormalized"] = False

    def unnormalizeExamples(self, examples: list[Tensor], dataIndex: int) -> list[Tensor]:  # noqa: N802, N803
        """New arrays of ``examples`` mapped back from the normalized range (the same list when not normalized)."""
        if not self._is_normalized(dataIndex):
            return examples
        info = self._normalization[dataIndex]
        return self._normalize_examples(
            examples, info["lowerBound"], info["upperBound"], info["minValues"], info["maxValues"]
        )

    def dispose(self) -> None:
        """Dispose every example."""
        if self.dataset is None:
            return
        for examples in self.dataset:
            for example in examples:
                example.dispose()
        self.dataset = []
