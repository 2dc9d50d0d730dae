"""``nf.node.summary_file_writer``: scalars and histograms read back by TensorBoard's own readers (the classic
event accumulator, and the plugin one that TensorBoard's dashboards use); the writer cache; the errors."""

from __future__ import annotations

import numpy as np
import pytest
from tensorboard_helpers import close_writers, read_run, scalars

import ndflow as nf
from ndflow.node import summary_writer

plugin_event_accumulator = pytest.importorskip("tensorboard.backend.event_processing.plugin_event_accumulator")
tensor_util = pytest.importorskip("tensorboard.util.tensor_util")


@pytest.fixture(autouse=True)
def _close_writers():
    yield
    close_writers()


def histogram_rows(path, tag: str) -> list[tuple[int, np.ndarray]]:
    return [(e.step, tensor_util.make_ndarray(e.tensor_proto)) for e in read_run(path).Tensors(tag)]


def test_scalars_of_numbers_and_tensors(tmp_path):
    writer = nf.node.summary_file_writer(tmp_path)
    value = nf.scalar(2.5)
    for step in range(5):
        writer.scalar("loss", 1.0 / (step + 1), step)
    writer.scalar("acc", value, 7)
    writer.scalar("acc", np.float32(0.75), 8.0, description="the **accuracy**")
    writer.scalar("acc", np.int64(3), 9)
    writer.flush()
    assert scalars(tmp_path, "loss") == [(s, pytest.approx(1.0 / (s + 1))) for s in range(5)]
    assert scalars(tmp_path, "acc") == [(7, 2.5), (8, 0.75), (9, 3.0)]
    assert read_run(tmp_path).SummaryMetadata("acc").summary_description == "the **accuracy**"
    assert not value.is_disposed  # the caller's tensor stays the caller's
    value.dispose()


def test_histograms_read_back_with_bucket_counts_summing_to_the_data_size(tmp_path):
    writer = nf.node.summary_file_writer(tmp_path)
    data = nf.random_normal([40, 25], 0, 1, "float32", 3)
    writer.histogram("weights", data, 1)
    writer.histogram("weights", [1, 2, 3, 4, 5], 2, buckets=4)
    writer.histogram("weights", np.ones([3, 2], np.int32), 3, description="constant")
    writer.histogram("weights", [], 4)
    writer.flush()
    (s1, h1), (s2, h2), (s3, h3), (s4, h4) = histogram_rows(tmp_path, "weights")
    assert (s1, s2, s3, s4) == (1, 2, 3, 4)
    flat = data.data_sync()
    assert h1.shape == (30, 3) and h1[:, 2].sum() == 1000
    assert h1[0, 0] == pytest.approx(flat.min()) and h1[-1, 1] == pytest.approx(flat.max())
    np.testing.assert_allclose(h1[1:, 0], h1[:-1, 1])  # buckets touch
    counts = np.histogram(flat, bins=30, range=(flat.min(), flat.max()))[0]
    assert np.abs(h1[:, 2] - counts).sum() <= 2  # equal widths (edge values may fall either way by rounding)
    # tfjs-node's bucketing: the maximum falls in the last bucket; equal values make one bucket of width 1.
    np.testing.assert_array_equal(h2, [[1, 2, 1], [2, 3, 1], [3, 4, 1], [4, 5, 2]])
    np.testing.assert_array_equal(h3, [[0.5, 1.5, 6]])
    assert h4.shape == (0, 3)
    plugin = plugin_event_accumulator.EventAccumulator(str(tmp_path))
    plugin.Reload()
    assert list(plugin.PluginTagToContent("histograms")) == ["weights"]  # what TensorBoard's dashboards list
    data.dispose()


def test_one_writer_per_log_dir_and_a_new_file_after_close(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    writer = nf.node.summary_file_writer("logs")
    assert nf.node.summary_file_writer(str(tmp_path / "logs"), max_queue=3) is writer
    assert nf.node.summary_file_writer(tmp_path / "other") is not writer
    writer.scalar("x", 1, 0)
    writer.close()
    writer.close()  # twice is fine
    again = nf.node.summary_file_writer("logs", filename_suffix=".run2")
    assert again is not writer and again.path.endswith(".run2")
    again.scalar("x", 2, 1)
    again.flush()
    assert scalars(tmp_path / "logs", "x") == [(0, 1.0), (1, 2.0)]  # the reader joins the two files of the run
    with pytest.raises(ValueError, match="SummaryFileWriter of 'logs' is closed"):
        writer.scalar("x", 3, 2)


def test_events_wait_in_the_queue_until_it_is_full_or_flushed(tmp_path):
    writer = nf.node.summary_file_writer(tmp_path, max_queue=3)
    for step in range(3):
        writer.scalar("q", step, step)
    assert read_run(tmp_path).Tags()["scalars"] == []  # still in memory
    writer.scalar("q", 3, 3)  # more than max_queue wait: written
    assert [s for s, _ in scalars(tmp_path, "q")] == [0, 1, 2, 3]
    writer.scalar("q", 4, 4)
    writer.flush()
    assert [s for s, _ in scalars(tmp_path, "q")] == [0, 1, 2, 3, 4]


def test_errors_name_the_function_and_argument(tmp_path):
    writer = nf.node.summary_file_writer(tmp_path)
    matrix = nf.ones([2, 2])
    cases = [
        (
            lambda: writer.scalar("x", 0, 1.5),
            ValueError,
            r"SummaryFileWriter.scalar: step must be an integer, got 1.5$",
        ),
        (lambda: writer.scalar("x", 1.0, "1"), TypeError, r"scalar: step must be an integer, got str '1'"),
        (lambda: writer.scalar("x", matrix, 1), ValueError, r"scalar: value must be a scalar \(rank 0\) tensor"),
        (lambda: writer.scalar("x", "high", 1), TypeError, r"value must be a number or a scalar tensor, got str"),
        (lambda: writer.scalar("", 1.0, 1), ValueError, r"scalar: name must be a non-empty string, got ''"),
        (lambda: writer.histogram("h", matrix, 1, buckets=0), ValueError, r"histogram: buckets must be a positive"),
        (lambda: writer.histogram("h", [1.0, np.nan], 1), ValueError, r"histogram: data must be finite"),
        (lambda: writer.histogram("h", ["a", "b"], 1), TypeError, r"histogram: data must be a tensor or an array"),
        (lambda: nf.node.summary_file_writer(""), ValueError, r"summary_file_writer: invalid logdir ''"),
        (lambda: nf.node.summary_file_writer(tmp_path / "y", max_queue=-1), ValueError, r"max_queue must be a number"),
        (lambda: nf.node.summary_file_writer(tmp_path, maxQueue=3), TypeError, r"'maxQueue' \(use 'max_queue'\)"),
    ]
    for call, error, message in cases:
        with pytest.raises(error, match=message):
            call()
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(OSError, match=r"summary_file_writer: cannot write to the log directory '.*file/run'"):
        nf.node.summary_file_writer(blocker / "run")
    matrix.dispose()


def test_bucketing_matches_tfjs_node_on_small_cases():
    rows = summary_writer.histogram_buckets(np.array([0, 0, 1, 9, 10], np.float32), 2)
    np.testing.assert_array_equal(rows, [[0, 5, 3], [5, 10, 2]])
    rows = summary_writer.histogram_buckets(np.array([-1, 1], np.float32), 3)
    assert rows[:, 2].tolist() == [1, 0, 1] and rows[-1, 1] == 1
