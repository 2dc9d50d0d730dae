#!/usr/bin/env python3
"""Draw the images of docs/visualize.md with ``nf.vis`` (matplotlib's Agg backend, fixed seeds).

The plots of a real training come from the digits CNN of ``examples/train_digits.py`` (a few epochs, seeded);
the charts of ``nf.vis.render`` from small made-up data, as in tfjs-vis's own examples. Matplotlib's PNGs are not
byte-for-byte the same on every machine (fonts, FreeType), so ``tests/vis/test_vis_docs.py`` checks that every
image the page shows exists and that this script draws each of them at the size committed, not the bytes.

    python tools/gen_vis_images.py [--out docs/images] [--epochs 4]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "examples")]

import ndflow as nf  # noqa: E402
from ndflow import vis  # noqa: E402

OUT = ROOT / "docs" / "images"


def _save(figure: Any, path: Path) -> None:
    figure.savefig(path, dpi=figure.dpi, metadata={"Software": None})  # no version stamp in the file


def training_images(out: Path, epochs: int) -> list[str]:
    """The digits CNN trained with live callbacks, then its history, summary, first layer and evaluation."""
    import train_digits

    x_train, y_train, x_test, y_test = train_digits.load_digits()
    model = train_digits.build_model()
    rng = np.random.default_rng(0)  # seeded weights (He-scaled normal kernels, zero biases): the same plots each run
    shapes = [tuple(w.shape) for w in model.weights]
    model.set_weights(
        [rng.normal(0, np.sqrt(2 / np.prod(s[:-1])), s).astype(np.float32) if len(s) > 1 else np.zeros(s, np.float32)
         for s in shapes]
    )  # fmt: skip
    live = vis.show.fit_callbacks(
        None, ["loss", "acc", "val_loss", "val_acc"], {"callbacks": ["onEpochEnd", "onBatchEnd"]}
    )
    history = model.fit(x_train, y_train, batch_size=32, epochs=epochs, verbose=0, shuffle=False,
                        validation_split=0.1, callbacks=live)  # fmt: skip
    _save(live.figure, out / "vis_fit_callbacks.png")
    _save(vis.show.history(None, history, ["loss", "val_loss", "acc", "val_acc"]), out / "vis_history.png")
    _save(vis.show.model_summary(None, model), out / "vis_model_summary.png")
    _save(vis.show.layer(None, model.layers[0]), out / "vis_layer.png")
    probabilities = model.predict(x_test, batch_size=128)
    predictions = nf.arg_max(probabilities, 1)
    labels = nf.tensor(y_test.argmax(1), dtype="int32")
    matrix = vis.metrics.confusion_matrix(labels, predictions, 10)
    per_class = vis.metrics.per_class_accuracy(labels, predictions, 10)
    names = [str(i) for i in range(10)]
    _save(vis.show.confusion_matrix(None, matrix, names), out / "vis_confusion_matrix.png")
    _save(vis.show.per_class_accuracy(None, per_class, names), out / "vis_per_class_accuracy.png")
    _save(vis.show.values_distribution(None, probabilities), out / "vis_values_distribution.png")
    nf.dispose([probabilities, predictions, labels])
    model.dispose()
    return ["vis_fit_callbacks.png", "vis_history.png", "vis_model_summary.png", "vis_layer.png",
            "vis_confusion_matrix.png", "vis_per_class_accuracy.png", "vis_values_distribution.png"]  # fmt: skip


def chart_images(out: Path) -> list[str]:
    """``nf.vis.render``'s charts of small seeded data."""
    rng = np.random.default_rng(0)
    first = [{"x": i, "y": float(v)} for i, v in enumerate(np.cumsum(rng.normal(size=100)) + 20)]
    second = [{"x": i, "y": float(v)} for i, v in enumerate(np.cumsum(rng.normal(size=100)) - 10)]
    data = {"values": [first, second], "series": ["First", "Second"]}
    cols, rows = 50, 20
    charts: dict[str, Callable[[], Any]] = {
        "vis_line_chart.png": lambda: vis.render.line_chart(None, data, {"xLabel": "step", "yLabel": "value"}),
        "vis_scatterplot.png": lambda: vis.render.scatterplot(None, data, zoom_to_fit=True),
        "vis_barchart.png": lambda: vis.render.barchart(
            None, [{"index": i, "value": v} for i, v in enumerate([50, 100, 150, 80, 120])]
        ),
        "vis_histogram.png": lambda: vis.render.histogram(
            None, [*rng.normal(10, 20, size=500).tolist(), float("inf"), float("nan"), 0.0]
        ),
        "vis_heatmap.png": lambda: vis.render.heatmap(
            None, {"values": [[i * j for j in range(rows)] for i in range(cols)]}, {"xLabel": "column", "yLabel": "row"}
        ),
        "vis_table.png": lambda: vis.render.table(
            None,
            {"headers": ["Col 1", "Col 2", "Col 3"], "values": [[1, 2, 3], ["4", "5", "6"], [7.12345, True, False]]},
        ),
    }
    for name, draw in charts.items():
        _save(draw(), out / name)
    return list(charts)


def trace_images(out: Path) -> list[str]:
    """A profiled predict drawn as the Performance tab would show it (``tools/plot_trace.py``)."""
    sys.path.insert(0, str(ROOT / "tools"))
    import plot_trace

    plot_trace.plot(plot_trace.demo_trace(), out / "vis_trace.png", "nf.profile of a small CNN's predict (cpu)")
    return ["vis_trace.png"]


def main(argv: list[str] | None = None) -> list[str]:
    """Write the images; returns their names."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--epochs", type=int, default=4)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    names = training_images(args.out, args.epochs) + chart_images(args.out) + trace_images(args.out)
    for name in names:
        print(args.out / name)
    return names


if __name__ == "__main__":
    main()
