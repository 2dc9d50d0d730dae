"""``nf.node.summary_file_writer``: tfjs-node's ``SummaryFileWriter``, writing TensorBoard event files.

The files are the ones TensorFlow's own summary writer makes: a TFRecord stream of ``Event`` protocol buffers,
opened by a ``file_version`` event, named ``events.out.tfevents.<seconds>.<host>.<pid>.<n><suffix>``. Scalars
are ``simple_value`` summaries (what TensorFlow's ``WriteScalarSummary`` writes, so TensorBoard's Scalars
dashboard and its event accumulator read them as scalars); histograms are ``[k, 3]`` float32 tensors of
``(left edge, right edge, count)`` rows tagged with the ``histograms`` plugin, bucketed as tfjs-node does
(``buckets`` equal-width buckets between the minimum and the maximum; one bucket of width 1 when all values are
equal; none when there is no data).

Why tensorboardX (the ``tensorboard`` extra): the event format needs the ``Event``/``Summary``/``TensorProto``
messages and the TFRecord framing (masked CRC32C). tensorboardX ships exactly these as a 90 kB wheel depending
on numpy, protobuf and packaging only, and is released regularly. TensorBoard's own package has the same
messages but pulls in grpcio, werkzeug, absl-py and its data server (about 50 MB installed) that a training
run does not need; TensorFlow is larger still. Only tensorboardX's messages and CRC are used: its own
``SummaryWriter`` writes from a background process queue, which can block training when the disk fails. The
queue here is the one of TensorFlow's C++ writer instead: events wait in memory and are written when more than
``max_queue`` wait, when ``flush_millis`` have passed since the last write, or on :meth:`flush`, all in the
caller's thread, so a failing write raises where it happens.
"""

from __future__ import annotations

import itertools
import math
import os
import socket
import threading
import time
from typing import Any

import numpy as np

from ..core.arguments import with_keyword_hint
from ..core.tensor import Tensor

EXTRA_HINT = "pip install 'ndflow[tensorboard]'"
_file_ids = itertools.count()
_cache: dict[str, SummaryFileWriter] = {}
_cache_lock = threading.Lock()


def load_protos(what: str) -> Any:
    """tensorboardX's protocol buffer modules and CRC (the ``tensorboard`` extra), or one clear ImportError."""
    try:
        from tensorboardX import record_writer
        from tensorboardX.proto import event_pb2, summary_pb2, tensor_pb2, tensor_shape_pb2, types_pb2
    except ImportError as e:
        raise ImportError(f"{what} needs tensorboardX to write TensorBoard event files: {EXTRA_HINT}") from e

    class Protos:
        event, summary, tensor, shape, types = event_pb2, summary_pb2, tensor_pb2, tensor_shape_pb2, types_pb2
        masked_crc32c = staticmethod(record_writer.masked_crc32c)

    return Protos


def make_log_dir(logdir: str, what: str) -> None:
    """Create ``logdir`` (and its parents) and check that files can be made in it; one clear OSError if not."""
    try:
        os.makedirs(logdir, exist_ok=True)
        if not os.access(logdir, os.W_OK | os.X_OK):
            raise PermissionError("no permission to write")
    except OSError as e:
        reason = e.strerror or str(e)
        raise OSError(f"{what}: cannot write to the log directory {logdir!r} ({type(e).__name__}: {reason})") from e


def _check_step(step: Any, what: str) -> int:
    if isinstance(step, bool) or not isinstance(step, int | float | np.integer | np.floating):
        raise TypeError(f"{what}: step must be an integer, got {type(step).__name__} {step!r}")
    if not float(step).is_integer():
        raise ValueError(f"{what}: step must be an integer, got {step!r}")
    return int(step)


def _scalar_value(value: Any, what: str) -> float:
    if isinstance(value, Tensor):
        if value.rank != 0:
            raise ValueError(f"{what}: value must be a scalar (rank 0) tensor or a number, got shape {value.shape}")
        if value.dtype in ("string", "complex64"):
            raise TypeError(f"{what}: value must be a real number, got a {value.dtype} tensor")
        return float(value.data_sync()[0])
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise TypeError(f"{what}: value must be a number or a scalar tensor, got {type(value).__name__}")
    return float(value)


def _histogram_data(data: Any, what: str) -> np.ndarray:
    if isinstance(data, Tensor):
        if data.dtype in ("string", "complex64"):
            raise TypeError(f"{what}: data must be castable to float32, got a {data.dtype} tensor")
        values = np.asarray(data.data_sync())
    else:
        try:
            values = np.asarray(data)
        except Exception as e:  # ragged lists and the like
            raise TypeError(f"{what}: data must be a tensor or an array of numbers, got {type(data).__name__}") from e
        if values.dtype.kind not in "biuf":
            raise TypeError(f"{what}: data must be a tensor or an array of numbers, got dtype {values.dtype}")
    values = values.astype(np.float32).ravel()
    if values.size and not np.isfinite(values).all():
        raise ValueError(f"{what}: data must be finite, got NaN or infinite values")
    return values


def histogram_buckets(values: np.ndarray, bucket_count: int) -> np.ndarray:
    """``[k, 3]`` float32 rows ``(left, right, count)``: tfjs-node's bucketing of the flat float32 ``values``."""
    if values.size == 0:
        return np.zeros((0, 3), np.float32)
    low, high = np.float32(values.min()), np.float32(values.max())
    if high == low:
        return np.array([[low - 0.5, low + 0.5, values.size]], np.float32)
    width = np.float32(high - low) / np.float32(bucket_count)
    index = np.minimum(np.floor((values - low) / width).astype(np.int64), bucket_count - 1)
    counts = np.bincount(index, minlength=bucket_count).astype(np.float32)
    edges = np.linspace(low, high, bucket_count + 1, dtype=np.float32)
    edges[-1] = high
    return np.stack([edges[:-1], edges[1:], counts], axis=1).astype(np.float32)


class SummaryFileWriter:
    """Writes scalar and histogram summaries of one log directory (tfjs-node's ``SummaryFileWriter``).

    Made by :func:`summary_file_writer`, which keeps one writer per directory.
    """

    def __init__(self, logdir: str, max_queue: int = 10, flush_millis: float = 120000, filename_suffix: str = ".v2"):
        what = "summary_file_writer"
        self._pb = load_protos(f"nf.node.{what}")
        make_log_dir(logdir, what)
        self.logdir = logdir
        self.max_queue = max_queue
        self.flush_millis = flush_millis
        self._queue: list[bytes] = []
        self._lock = threading.Lock()
        name = (
            f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}.{os.getpid()}."
            f"{next(_file_ids)}{filename_suffix}"
        )
        self.path = os.path.join(logdir, name)
        try:
            self._file: Any = open(self.path, "wb")  # noqa: SIM115 (kept open until close())
        except OSError as e:
            raise OSError(f"{what}: cannot write to the log directory {logdir!r} ({e.strerror or e})") from e
        self._last_flush = time.monotonic()
        version = self._pb.event.Event(wall_time=time.time(), file_version="brain.Event:2")
        self._queue.append(version.SerializeToString())
        self.flush()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._file is None

    def scalar(self, name: str, value: Tensor | float, step: int, description: str | None = None) -> None:
        """Write ``value`` (a number or a scalar tensor, which stays yours) as scalar ``name`` at ``step``.

        ``description`` (Markdown) is shown by TensorBoard beside the chart (tfjs-node rejects it: "not
        implemented yet").
        """
        what = "SummaryFileWriter.scalar"
        _check_name(name, what)
        step = _check_step(step, what)
        number = _scalar_value(value, what)
        pb = self._pb
        summary_value = pb.summary.Summary.Value(tag=name, simple_value=number)
        if description is not None:
            summary_value.metadata.summary_description = str(description)
            summary_value.metadata.plugin_data.plugin_name = "scalars"  # a described value names its dashboard
        self._add(step, summary_value)

    def histogram(
        self, name: str, data: Any, step: int, buckets: int | None = None, description: str | None = None
    ) -> None:
        """Write the histogram of every element of ``data`` (a tensor of any shape, or an array) at ``step``.

        ``buckets`` (default 30) equal-width buckets span the data's range; TensorBoard's Histograms and
        Distributions dashboards show the series of one ``name``.
        """
        what = "SummaryFileWriter.histogram"
        _check_name(name, what)
        step = _check_step(step, what)
        bucket_count = 30 if buckets is None else buckets
        if isinstance(bucket_count, bool) or not isinstance(bucket_count, int | np.integer) or bucket_count <= 0:
            raise ValueError(f"{what}: buckets must be a positive integer, got {buckets!r}")
        rows = histogram_buckets(_histogram_data(data, what), int(bucket_count))
        pb = self._pb
        shape = pb.shape.TensorShapeProto(dim=[pb.shape.TensorShapeProto.Dim(size=n) for n in rows.shape])
        tensor = pb.tensor.TensorProto(
            dtype=pb.types.DT_FLOAT, tensor_shape=shape, tensor_content=rows.astype("<f4").tobytes()
        )
        metadata = pb.summary.SummaryMetadata(
            plugin_data=pb.summary.SummaryMetadata.PluginData(plugin_name="histograms", content=b""),
            summary_description="" if description is None else str(description),
        )
        self._add(step, pb.summary.Summary.Value(tag=name, tensor=tensor, metadata=metadata))

    def _add(self, step: int, value: Any) -> None:
        pb = self._pb
        event = pb.event.Event(wall_time=time.time(), step=step, summary=pb.summary.Summary(value=[value]))
        with self._lock:
            if self._file is None:
                raise ValueError(f"SummaryFileWriter of {self.logdir!r} is closed")
            self._queue.append(event.SerializeToString())
            due = (time.monotonic() - self._last_flush) * 1000 > self.flush_millis
            if len(self._queue) > self.max_queue or due:
                self._write_queue()

    def _write_queue(self) -> None:
        crc = self._pb.masked_crc32c
        records = []
        for data in self._queue:
            header = len(data).to_bytes(8, "little")
            records += [header, crc(header).to_bytes(4, "little"), data, crc(data).to_bytes(4, "little")]
        self._queue = []
        self._last_flush = time.monotonic()
        self._file.write(b"".join(records))
        self._file.flush()

    def flush(self) -> None:
        """Write every waiting event to the file now."""
        with self._lock:
            if self._file is not None:
                self._write_queue()

    def close(self) -> None:
        """Flush, close the file and forget this writer (beyond tfjs-node, whose writers live as long as the
        process); :func:`summary_file_writer` then makes a new one, in a new file, for this directory."""
        with self._lock:
            if self._file is None:
                return
            try:
                self._write_queue()
            finally:
                self._file.close()
                self._file = None
        with _cache_lock:
            if _cache.get(_key(self.logdir)) is self:
                del _cache[_key(self.logdir)]

    def __repr__(self) -> str:
        return f"SummaryFileWriter(logdir={self.logdir!r}{', closed' if self.closed else ''})"


def _check_name(name: Any, what: str) -> None:
    if not isinstance(name, str) or not name:
        raise ValueError(f"{what}: name must be a non-empty string, got {name!r}")


def _key(logdir: str) -> str:
    return os.path.normcase(os.path.abspath(logdir))


def check_logdir(logdir: Any, what: str) -> str:
    """``logdir`` as a non-empty string (a path-like is accepted too), or a clear error."""
    if isinstance(logdir, os.PathLike):
        logdir = os.fspath(logdir)
    if not isinstance(logdir, str) or not logdir:
        raise ValueError(f"{what}: invalid logdir {logdir!r}: expected a non-empty string")
    return logdir


@with_keyword_hint
def summary_file_writer(
    logdir: str | os.PathLike[str], max_queue: int = 10, flush_millis: float = 120000, filename_suffix: str = ".v2"
) -> SummaryFileWriter:
    """A summary writer for TensorBoard that writes event files into ``logdir`` (tfjs-node's
    ``tf.node.summaryFileWriter``; needs the ``tensorboard`` extra).

    One writer is kept per directory: a second call with the same ``logdir`` returns the first writer (its
    other arguments are then ignored, as in tfjs-node).

    Args:
        logdir: the directory of the event file, made if missing.
        max_queue: how many events may wait in memory before they are written.
        flush_millis: the longest time (ms) an event waits before it is written (checked at each write).
        filename_suffix: the end of the event file's name.

    Example::

        writer = nf.node.summary_file_writer('/tmp/tb_logdir')
        for step in range(100):
            writer.scalar('dummy_value', math.sin(2 * math.pi * step / 8), step)
        writer.flush()
    """
    what = "summary_file_writer"
    logdir = check_logdir(logdir, what)
    for label, number in (("max_queue", max_queue), ("flush_millis", flush_millis)):
        if isinstance(number, bool) or not isinstance(number, int | float) or math.isnan(number) or number < 0:
            raise ValueError(f"{what}: {label} must be a number >= 0, got {number!r}")
    if not isinstance(filename_suffix, str):
        raise TypeError(f"{what}: filename_suffix must be a string, got {type(filename_suffix).__name__}")
    key = _key(logdir)
    with _cache_lock:
        writer = _cache.get(key)
        if writer is None or writer.closed:
            writer = SummaryFileWriter(logdir, int(max_queue), flush_millis, filename_suffix)
            _cache[key] = writer
    return writer


__all__ = ["SummaryFileWriter", "histogram_buckets", "summary_file_writer"]
