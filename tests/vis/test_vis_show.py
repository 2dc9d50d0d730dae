"""nf.vis.show: training histories (after fit and live during it), models, layers, evaluation and tensors."""

from __future__ import annotations

import numpy as np
import pytest
from vis_helpers import has_color, png_pixels

import ndflow as nf
from ndflow import vis

RNG = np.random.default_rng(0)
X = RNG.random((48, 4), dtype=np.float32)
Y = np.eye(3, dtype=np.float32)[RNG.integers(0, 3, 48)]


@pytest.fixture
def model():
    m = nf.sequential(layers=[nf.layers.dense(units=8, input_shape=[4], activation="relu"),
                              nf.layers.dense(units=3, activation="softmax")])  # fmt: skip
    m.compile(optimizer="adam", loss="categoricalCrossentropy", metrics=["accuracy"])
    yield m
    m.dispose()


def test_history_after_fit_one_panel_per_metric_and_its_val_twin(model, png):
    history = model.fit(X, Y, epochs=3, batch_size=16, verbose=0, validation_split=0.25)
    fig = vis.show.history(
        png("history"), history, ["loss", "val_loss", "acc", "val_acc"], {"width": 300, "height": 200}
    )
    png_pixels(png("history"), (600, 200))
    loss, acc = fig.axes
    assert [line.get_label() for line in loss.get_lines()] == ["loss", "val_loss"]
    assert np.allclose(loss.get_lines()[0].get_ydata(), history.history["loss"])
    assert acc.get_ylim() == (0, 1)  # accuracy panels span 0..1 ...
    assert loss.get_xlabel() == "Iteration" and loss.get_ylabel() == "Value"
    fig = vis.show.history(history, ["acc"], zoom_to_fit_accuracy=True)  # ... unless asked; data first
    assert len(fig.axes) == 1 and fig.axes[0].get_ylim() != (0, 1)


def test_history_like_inputs():
    as_dict = {"loss": [1.0, 0.5, 0.25], "acc": [0.2, 0.6, 0.9]}
    logs = [{"loss": 1.0, "acc": 0.2}, {"loss": 0.5, "acc": 0.6}, {"loss": 0.25, "acc": 0.9}]
    nested = [[{"loss": 1.0}, {"loss": 0.5}, {"loss": 0.25}], [{"acc": 0.2}, {"acc": 0.6}, {"acc": 0.9}]]
    for history in (as_dict, {"history": as_dict}, logs, nested):
        fig = vis.show.history(None, history, ["loss", "acc"])
        assert list(fig.axes[0].get_lines()[0].get_ydata()) == [1.0, 0.5, 0.25]
        assert list(fig.axes[1].get_lines()[0].get_ydata()) == [0.2, 0.6, 0.9]


def test_history_errors_name_the_metric_and_what_is_there():
    with pytest.raises(
        ValueError, match=r"show\.history: metric 'accuracy' is not in the history; it has 'acc', 'loss'"
    ):
        vis.show.history(None, {"loss": [1.0], "acc": [0.5]}, ["loss", "accuracy"])
    with pytest.raises(ValueError, match=r"show\.history: the history is empty"):
        vis.show.history(None, {"loss": []}, ["loss"])
    with pytest.raises(ValueError, match="the history is empty"):
        vis.show.history(None, [], ["loss"])
    with pytest.raises(ValueError, match="metrics must be a non-empty list"):
        vis.show.history(None, {"loss": [1.0]}, [])
    with pytest.raises(TypeError, match="history must be a History"):
        vis.show.history(None, object(), ["loss"])


def test_fit_callbacks_resave_the_png_during_fit(model, png):
    path = png("live")
    callbacks = vis.show.fit_callbacks(path, ["loss", "acc", "val_loss", "val_acc"], {"callbacks": ["onEpochEnd"]})
    assert set(callbacks) == {"on_epoch_end", "on_train_end"}
    seen: list[bytes] = []

    def after_each_epoch(epoch, logs):
        with open(path, "rb") as f:
            seen.append(f.read())

    model.fit(X, Y, epochs=3, batch_size=16, verbose=0, validation_split=0.25,
              callbacks=[callbacks, {"on_epoch_end": after_each_epoch}])  # fmt: skip
    assert len(seen) == 3 and len(set(seen)) == 3  # written again after every epoch, each time different
    assert callbacks.renders == 3 and callbacks.path == path
    assert len(callbacks.logs["on_epoch_end"]["loss"]) == 3
    pixels = png_pixels(path)
    assert has_color(pixels, (0x1F, 0x77, 0xB4))  # the first series' line
    panels = [ax for ax in callbacks.figure.axes if ax.get_lines()]
    assert [ax.get_title() for ax in panels] == ["loss", "acc"]
    assert panels[0].get_xlabel() == "Epoch"


def test_fit_callbacks_per_batch_rows(model, png):
    callbacks = vis.show.fit_callbacks(None, ["loss"], path=png("batches"), min_interval_ms=0)
    model.fit(X, Y, epochs=2, batch_size=16, verbose=0, callbacks=callbacks)
    assert callbacks.renders == 2 + 2 * 3 + 1  # each epoch, each batch, and once at the end
    labels = [ax.get_xlabel() for ax in callbacks.figure.axes if ax.get_lines()]
    assert labels == ["Epoch", "Batch"]
    png_pixels(png("batches"))
    assert vis.show.fit_callbacks(["loss"]).figure is None  # container left out; nothing drawn yet


def test_fit_callbacks_errors():
    with pytest.raises(ValueError, match="callbacks may be 'on_epoch_end' and 'on_batch_end'"):
        vis.show.fit_callbacks(None, ["loss"], callbacks=["onTrainBegin"])
    with pytest.raises(ValueError, match="metrics must be a non-empty list"):
        vis.show.fit_callbacks(None, [])
    with pytest.raises(TypeError, match="unknown option"):
        vis.show.fit_callbacks(None, ["loss"], {"refresh": 1})


def test_model_summary_and_layer(model, png):
    fig = vis.show.model_summary(png("summary"), model)
    png_pixels(png("summary"))
    cells = {k: v.get_text().get_text() for k, v in fig.axes[0].tables[0].get_celld().items()}
    assert [cells[(0, c)] for c in range(4)] == ["Layer Name", "Output Shape", "# Of Params", "Trainable"]
    assert [cells[(1, c)] for c in range(1, 4)] == ["[batch,8]", "40", "true"]
    before = nf.memory().num_tensors
    fig = vis.show.layer(png("layer"), model.layers[0])
    assert nf.memory().num_tensors == before  # the weights read are freed
    pixels = png_pixels(png("layer"))
    assert has_color(pixels, (0x00, 0x1B, 0x44), at_least=500)  # histogram bars
    cells = {k: v.get_text().get_text() for k, v in fig.axes[0].tables[0].get_celld().items()}
    weights = model.layers[0].get_weights()
    values = np.asarray(weights[0].data_sync())
    nf.dispose(weights)
    assert cells[(1, 1)] == "[4,8]" and cells[(1, 4)] == "32"
    assert float(cells[(1, 2)]) == pytest.approx(values.min(), abs=1e-4)
    assert len(fig.axes) == 3  # the table, then one histogram per weight


def test_a_model_never_built():
    unbuilt = nf.sequential()
    with pytest.raises(ValueError, match=r"show\.model_summary: the model has never been built"):
        vis.show.model_summary(None, unbuilt)
    with pytest.raises(ValueError, match=r"show\.layer: layer \S+ has never been built"):
        vis.show.layer(None, nf.layers.dense(units=3))
    with pytest.raises(TypeError, match="model must be a LayersModel"):
        vis.show.model_summary(None, {"layers": []})


def test_per_class_accuracy_and_confusion_matrix(png):
    labels, predictions = [0, 0, 1, 2, 2, 2], [0, 0, 0, 2, 1, 1]
    accuracy = vis.metrics.per_class_accuracy(labels, predictions)
    fig = vis.show.per_class_accuracy(png("pca"), accuracy, ["cat", "dog", "mouse"])
    png_pixels(png("pca"))
    cells = {k: v.get_text().get_text() for k, v in fig.axes[0].tables[0].get_celld().items()}
    assert [cells[(3, c)] for c in range(3)] == ["mouse", "0.3333", "3"]
    assert vis.show.per_class_accuracy(accuracy) is not None  # data first
    matrix = vis.metrics.confusion_matrix(labels, predictions)
    fig = vis.show.confusion_matrix(png("cm"), matrix, ["cat", "dog", "mouse"])
    png_pixels(png("cm"))
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["cat", "dog", "mouse"]
    with pytest.raises(ValueError, match="class_labels has 2 name"):
        vis.show.per_class_accuracy(None, accuracy, ["a", "b"])
    with pytest.raises(TypeError, match="class_accuracy must be a list"):
        vis.show.per_class_accuracy(None, [0.5, 0.2])


def test_values_distribution(png):
    t = nf.tensor([0, 0, 0, 0, 2, 3, 4.0])
    fig = vis.show.values_distribution(png("values"), t)
    t.dispose()
    pixels = png_pixels(png("values"))
    assert pixels.shape[1] == 640 and pixels.shape[0] > 150  # the histogram 150 pixels high, the statistics above
    cells = {v.get_text().get_text() for v in fig.axes[0].tables[0].get_celld().values()}
    assert {"7", "4 (57.14%)"} <= cells
    with pytest.raises(TypeError, match=r"show\.values_distribution: tensor must be a Tensor"):
        vis.show.values_distribution(None, [1, 2])


def test_missing_matplotlib_is_one_import_error(monkeypatch):
    import sys

    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError, match=r"nf\.vis\.render\.line_chart needs matplotlib: pip install 'ndflow\[vis\]'"):
        vis.render.line_chart(None, {"values": [{"x": 0, "y": 0}]})
    with pytest.raises(ImportError, match=r"ndflow\[vis\]"):
        vis.show.fit_callbacks(None, ["loss"])
    assert vis.metrics.accuracy([1, 2], [1, 3]) == 0.5  # the metrics need no matplotlib


def test_fit_callbacks_in_a_notebook_update_one_display(model, monkeypatch):
    """In a notebook the figure is shown once and then updated in place (IPython stood in for by a fake)."""
    import sys
    import types

    shown: list[tuple[str, object]] = []

    class Handle:
        def update(self, figure):
            shown.append(("update", figure))

    def display(figure, display_id=False):
        assert display_id is True
        shown.append(("display", figure))
        return Handle()

    shell = types.SimpleNamespace(config={"IPKernelApp": {}})
    ipython = types.ModuleType("IPython")
    ipython.get_ipython = lambda: shell
    ipython_display = types.ModuleType("IPython.display")
    ipython_display.display = display
    monkeypatch.setitem(sys.modules, "IPython", ipython)
    monkeypatch.setitem(sys.modules, "IPython.display", ipython_display)
    callbacks = vis.show.fit_callbacks(None, ["loss"], callbacks=["on_epoch_end"])
    model.fit(X, Y, epochs=3, batch_size=16, verbose=0, callbacks=callbacks)
    assert [kind for kind, _ in shown] == ["display", "update", "update"]
    assert all(figure is callbacks.figure for _, figure in shown)
