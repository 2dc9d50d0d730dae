"""nf.vis.render: every chart renders to a PNG of the asked size with the data drawn; containers, options and
wrong data."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.figure import Figure
from vis_helpers import has_color, png_pixels

import ndflow as nf
from ndflow import vis

SERIES = {"values": [[{"x": i, "y": i * i} for i in range(10)], [{"x": i, "y": 50 - i} for i in range(10)]],
          "series": ["square", "down"]}  # fmt: skip


def test_line_chart_draws_each_series_in_its_color(png):
    fig = vis.render.line_chart(
        png("line"), SERIES, {"width": 400, "height": 300, "seriesColors": ["#ff0000", "#0000ff"]}
    )
    assert isinstance(fig, Figure)
    pixels = png_pixels(png("line"), (400, 300))
    assert has_color(pixels, (255, 0, 0)) and has_color(pixels, (0, 0, 255))
    ax = fig.axes[0]
    assert ax.get_xlabel() == "x" and ax.get_ylabel() == "y"  # tfjs-vis's defaults
    assert [line.get_label() for line in ax.get_lines()] == ["square", "down"]
    assert ax.get_ylim()[0] <= 0  # from zero unless zoom_to_fit


def test_line_chart_options_camel_case_snake_case_and_keywords_agree():
    data = {"values": [{"x": 0, "y": 5}, {"x": 1, "y": 6}]}
    figs = [
        vis.render.line_chart(None, data, {"xLabel": "epoch", "zoomToFit": True}),
        vis.render.line_chart(None, data, {"x_label": "epoch", "zoom_to_fit": True}),
        vis.render.line_chart(None, data, x_label="epoch", zoom_to_fit=True),
        vis.render.line_chart(data, {"xLabel": "epoch", "zoomToFit": True}),  # the container left out
    ]
    for fig in figs:
        assert fig.axes[0].get_xlabel() == "epoch"
        assert fig.axes[0].get_ylim()[0] > 4  # zoomed to the data
        assert fig.axes[0].get_lines()[0].get_label() == "Series 1"
    fig = vis.render.line_chart(None, data, y_axis_domain=[-10, 10])
    assert fig.axes[0].get_ylim() == (-10, 10)


def test_scatterplot_and_barchart(png):
    vis.render.scatterplot(png("scatter"), SERIES, width=360, height=240)
    png_pixels(png("scatter"), (360, 240))
    data = [{"index": 0, "value": 50}, {"index": 1, "value": 100}, {"index": 2, "value": 150}]
    vis.render.barchart(png("bar"), data, {"color": "#00aa00"})
    pixels = png_pixels(png("bar"), (480, 320))
    assert has_color(pixels, (0, 170, 0), at_least=2000)  # three filled bars
    fig = vis.render.barchart(None, data, color=["#ff0000", "#00ff00", "#0000ff"])
    assert len(fig.axes[0].patches) == 3


def test_histogram_with_stats_table_and_without(png):
    values = [float(v) for v in np.random.default_rng(0).normal(size=300)] + [float("nan"), float("inf"), 0.0]
    fig = vis.render.histogram(png("hist"), values, max_bins=8)
    pixels = png_pixels(png("hist"))
    assert has_color(pixels, (0x00, 0x1B, 0x44), at_least=3000)  # tfjs-vis's bar color
    texts = [t.get_text().get_text() for t in fig.axes[0].tables[0].get_celld().values()]
    assert {"Num Vals", "# NaNs", "# Infinity", "303"} <= set(texts)
    assert sum(p.get_height() for p in fig.axes[-1].patches) == 301  # NaN and inf are left out of the bars
    fig = vis.render.histogram(None, [{"value": 1}, {"value": 2}, {"value": 2}], stats=False)
    assert len(fig.axes) == 1 and not fig.axes[0].tables
    t = nf.tensor([1.0, 2.0, 2.0, 3.0])
    fig = vis.render.histogram(None, t)  # a tensor is read, not kept or freed
    assert not t.is_disposed
    t.dispose()


def test_heatmap_is_column_major_unless_row_major(png):
    data = {"values": [[4, 2, 8, 20], [1, 7, 2, 10], [3, 3, 20, 13]], "xTickLabels": ["cheese", "pig", "font"],
            "yTickLabels": ["speed", "smoothness", "dexterity", "mana"]}  # fmt: skip
    fig = vis.render.heatmap(png("heat"), data, {"colorMap": "blues"})
    png_pixels(png("heat"))
    image = fig.axes[0].images[0].get_array()
    assert image.shape == (4, 3) and image[3, 0] == 20  # y = 'mana', x = 'cheese'
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["cheese", "pig", "font"]
    fig = vis.render.heatmap(None, {"values": [[1, 2, 3], [4, 5, 6]]}, row_major=True, domain=[0, 10])
    assert fig.axes[0].images[0].get_array().shape == (2, 3)
    t = nf.tensor([[1.0, 2.0], [3.0, 4.0]])
    vis.render.heatmap(None, {"values": t})
    t.dispose()


def test_confusion_matrix_cells_and_text(png):
    data = {"values": [[4, 2, 8], [1, 7, 2], [3, 3, 20]], "tickLabels": ["a", "b", "c"]}
    fig = vis.render.confusion_matrix(png("cm"), data)
    pixels = png_pixels(png("cm"), (460, 400))
    assert has_color(pixels, (0x42, 0x92, 0xC6), at_least=500)  # the darkest cell, tfjs-vis's blue
    texts = {t.get_text() for t in fig.axes[0].texts}
    assert {"4", "7", "20"} <= texts
    fig = vis.render.confusion_matrix(None, data, shade_diagonal=False, show_text_overlay=False)
    image = fig.axes[0].images[0].get_array()
    assert np.ma.is_masked(image[0, 0]) or np.isnan(image[0, 0])
    assert not fig.axes[0].texts


def test_table(png):
    fig = vis.render.table(png("table"), {"headers": ["Col 1", "Col 2"], "values": [[1, 2.123456789], ["x", True]]})
    png_pixels(png("table"))
    cells = {k: v.get_text().get_text() for k, v in fig.axes[0].tables[0].get_celld().items()}
    assert cells[(0, 0)] == "Col 1" and cells[(1, 1)] == "2.1235" and cells[(2, 1)] == "True"


def test_containers_figure_axes_surface_and_new(png):
    data = {"values": [{"x": 0, "y": 1}, {"x": 1, "y": 3}]}
    fig = Figure(figsize=(3, 2), dpi=100)
    assert vis.render.line_chart(fig, data) is fig
    fig2 = Figure()
    axes = fig2.subplots(1, 2)
    assert vis.render.barchart(axes[1], [{"index": 0, "value": 1}]) is fig2
    assert len(axes[1].patches) == 1 and not axes[0].patches
    fig3 = vis.render.line_chart({"name": "Line chart", "tab": "Charts"}, data, path=png("surface"))
    assert fig3._suptitle.get_text() == "Line chart"
    png_pixels(png("surface"))
    with pytest.raises(ValueError, match="3 panels|2 panels"):
        vis.show.history(fig2.axes[0], {"loss": [1.0], "acc": [0.5]}, ["loss", "acc"])


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (
            lambda: vis.render.line_chart(None, {"values": []}),
            r"render\.line_chart: data\['values'\] must be a non-empty",
        ),
        (lambda: vis.render.line_chart(None, [1, 2]), r"render\.line_chart: data must be a dict"),
        (lambda: vis.render.line_chart(None, {"values": [{"x": 1}]}), r"data\['values'\]\[0\] must have 'x' and 'y'"),
        (lambda: vis.render.line_chart(None, {"values": [{"x": 1, "y": "a"}]}), r"\['y'\] must be a number"),
        (lambda: vis.render.line_chart(None, SERIES, {"series_colors": ["red"]}), "series_colors has 1"),
        (lambda: vis.render.line_chart(None, {**SERIES, "series": ["one"]}), r"data\['series'\] has 1 name"),
        (lambda: vis.render.line_chart(None, SERIES, {"xlabelz": 1}), r"unknown option\(s\) 'xlabelz'"),
        (lambda: vis.render.line_chart(None, SERIES, 5), "opts: expected a dict"),
        (lambda: vis.render.barchart(None, [{"index": 0}]), r"data\[0\] must be \{'index'"),
        (lambda: vis.render.histogram(None, "abc"), "must be a list of numbers"),
        (lambda: vis.render.histogram(None, [{"v": 1}]), r"data\[0\] has no 'value' field"),
        (lambda: vis.render.histogram(None, [1, 2], max_bins=0), "max_bins must be a positive int"),
        (lambda: vis.render.heatmap(None, {"values": [[1, 2], [3]]}), "rows of equal length"),
        (lambda: vis.render.heatmap(None, {"values": [[1, 2]], "xTickLabels": ["a", "b"]}), "x_tick_labels has 2"),
        (lambda: vis.render.heatmap(None, {"values": [[1]]}, color_map="jet"), "color_map must be"),
        (lambda: vis.render.confusion_matrix(None, {"values": [[1, 2]]}), "must be square"),
        (lambda: vis.render.table(None, {"values": [[1]]}), "must have a 'headers' property"),
        (lambda: vis.render.table(None, {"headers": ["a"], "values": [[1, 2]]}), "has 2 cells for 1 headers"),
        (lambda: vis.render.line_chart(42, SERIES), "container: expected None, a path"),
    ],
)
def test_wrong_data_is_one_clear_error(call, match):
    with pytest.raises((TypeError, ValueError), match=match):
        call()


def test_wrong_tensor_data_leaks_nothing():
    t = nf.tensor([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="non-empty 2D matrix"):
        vis.render.heatmap(None, {"values": t})
    t.dispose()
    with pytest.raises(ValueError, match="disposed"):
        vis.render.histogram(None, t)


def test_tfjs_spelling_linechart_is_line_chart():
    assert vis.render.linechart is vis.render.line_chart
