"""``nf.data.microphone``: spectrograms (and waveforms) from a sound device or an audio file (tfjs-data's
``MicrophoneIterator``).

Each element is a dict with ``'spectrogram'``, float32 ``[number_frames, column_truncate_length, 1]``, and/or
``'waveform'``, float32 ``[number_frames * fft_size, 1]`` (only the keys that are included). As in TF.js the
analyser's own FFT is ``2 * fft_size`` long, so a spectrogram column has ``fft_size`` bins of
``sample_rate_hz / (2 * fft_size)`` Hz each (truncated to ``column_truncate_length``), computed as Web Audio's
``AnalyserNode`` does (:mod:`.spectrogram`), and a waveform frame is ``fft_size`` samples.

The analysis steps by ``fft_size`` samples, the hop of TF.js's polling timer, but on the samples themselves, so
no frame is lost or doubled. Frame ``k`` of a run analyses samples ``[k * fft_size, (k + 2) * fft_size)``, and
its waveform is the first half of that window (what ``getFloatTimeDomainData`` gives). The smoothing state
carries over from one element to the next until ``stop()``. A file ends (``done``) when fewer samples are
left than one more element needs; a device streams until ``stop()``, each ``next()`` covering the time after
the call.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from typing import Any, NoReturn

import numpy as np

from ..core.tensor import Tensor
from ..ops.creation import tensor
from .audio_source import AudioDevice, AudioFile
from .config import merge_config
from .lazy_iterator import IteratorResult, LazyIterator
from .results import Completed
from .spectrogram import AnalyserNode

__all__ = ["MicrophoneIterator", "microphone"]

_WHAT = "nf.data.microphone"
_CONFIG_KEYS = {
    "sampleRateHz": "sample_rate_hz",
    "fftSize": "fft_size",
    "columnTruncateLength": "column_truncate_length",
    "numFramesPerSpectrogram": "number_frames",
    "includeSpectrogram": "include_spectrogram",
    "includeWaveform": "include_waveform",
    "audioTrackConstraints": "audio_track_constraints",
    "smoothingTimeConstant": "smoothing_time_constant",
}


class MicrophoneIterator(LazyIterator[dict[str, Tensor]]):
    """Spectrogram (and waveform) tensors of a sound device or an audio file; made by :func:`microphone`."""

    def __init__(
        self,
        source: int | str | os.PathLike | None = None,
        sample_rate_hz: int | None = 44100,
        fft_size: int = 1024,
        column_truncate_length: int | None = None,
        number_frames: int = 43,
        include_spectrogram: bool = True,
        include_waveform: bool = False,
        audio_track_constraints: Mapping[str, Any] | None = None,
        smoothing_time_constant: float = 0,
    ) -> None:
        self.fft_size = _positive_int(fft_size, "fft_size")
        if self.fft_size & (self.fft_size - 1) or not 16 <= self.fft_size <= 16384:
            raise ValueError(
                f"{_WHAT}: argument 'fft_size' must be a power of 2 from 16 (2**4) to 16384 (2**14), got {fft_size}"
            )
        self.number_frames = _positive_int(number_frames, "number_frames")
        truncate = self.fft_size if column_truncate_length is None else column_truncate_length
        self.column_truncate_length = _positive_int(truncate, "column_truncate_length")
        if self.column_truncate_length > self.fft_size:
            raise ValueError(
                f"{_WHAT}: argument 'column_truncate_length' must be at most fft_size ({self.fft_size} bins), "
                f"got {column_truncate_length}"
            )
        if sample_rate_hz is not None:
            sample_rate_hz = _positive_int(sample_rate_hz, "sample_rate_hz")
        tau = smoothing_time_constant
        if isinstance(tau, bool) or not isinstance(tau, int | float) or not 0 <= tau <= 1:
            raise ValueError(f"{_WHAT}: argument 'smoothing_time_constant' must be between 0 and 1, got {tau!r}")
        self.include_spectrogram = bool(include_spectrogram)
        self.include_waveform = bool(include_waveform)
        if not self.include_spectrogram and not self.include_waveform:
            raise ValueError(
                f"{_WHAT}: include_spectrogram and include_waveform are both False; at least one kind of data "
                "must be returned"
            )
        self.smoothing_time_constant = float(tau)
        if isinstance(source, bool) or not (source is None or isinstance(source, int | str | os.PathLike)):
            raise TypeError(
                f"{_WHAT}: argument 'source' must be None (the default input device), a device index (int) or an "
                f"audio file path, got {type(source).__name__}"
            )
        self._source: AudioFile | AudioDevice
        if isinstance(source, str | os.PathLike):
            if audio_track_constraints:
                raise ValueError(f"{_WHAT}: audio_track_constraints apply to a device, not to the file {source!r}")
            self._source = AudioFile(source, sample_rate_hz, _WHAT)
        else:
            self._source = AudioDevice(source, sample_rate_hz, audio_track_constraints, _WHAT)
        self.source = source if source is None or isinstance(source, int) else os.fspath(source)
        self.is_async = isinstance(self._source, AudioDevice)
        self._analyser = AnalyserNode(2 * self.fft_size, self.smoothing_time_constant)
        self._window: np.ndarray | None = None

    @property
    def is_streaming(self) -> bool:
        """Whether the source is open (between ``start()`` and ``stop()`` or the end of a file)."""
        return self._source.is_open

    def summary(self) -> str:
        return "microphone"

    def get_sample_rate(self) -> int | None:
        """The sample rate of the data in Hz (TF.js's ``getSampleRate()``); None before the first start."""
        return self._source.sample_rate

    def start(self) -> Completed:
        """Open the source (a file starts over) with a fresh analyser; nothing happens while it is open."""
        self._closed = False
        if not self._source.is_open:
            self._source.open()
            self._analyser.reset()
            self._window = None
        return Completed()

    def stop(self) -> None:
        """Release the device or file; ``next()`` is done until ``start()``."""
        self._source.close()
        self._window = None

    def close(self) -> None:
        """:meth:`stop`; ``start()`` may open the source again."""
        self.stop()
        super().close()

    def next(self) -> IteratorResult[dict[str, Tensor]]:
        """The next element (see the module docstring); a device source blocks about one element's duration."""
        if self.is_async:
            return self.run_blocking(self.next_async, "MicrophoneIterator.next")
        return self._result(self._collect())

    async def next_async(self) -> IteratorResult[dict[str, Tensor]]:
        """:meth:`next` for ``await``; a device is read in a worker thread so that the event loop keeps running
        (the tensors are made back in the caller's thread)."""
        if self.is_async:
            return self._result(await asyncio.to_thread(self._collect))
        return self._result(self._collect())

    def capture(self) -> dict[str, Tensor] | None:
        """The next element's dict (None once done): TF.js's ``capture()``."""
        return self.next().value

    async def capture_async(self) -> dict[str, Tensor] | None:
        """:meth:`capture` as a coroutine."""
        return (await self.next_async()).value

    def to_array(self) -> NoReturn:
        """Refused, as in TF.js: an audio stream is not collected into a list."""
        raise TypeError(f"{_WHAT}: cannot convert an audio stream to an array; iterate over it instead")

    def _collect(self) -> dict[str, np.ndarray] | None:
        """The next element's arrays (numpy only: this may run in a worker thread), or None when done."""
        if not self._source.is_open:
            return None
        n = self.fft_size
        if self.is_async:  # a device: start from what is recorded now, keeping one hop to complete the window
            self._window = None
            self._source.discard_stale(n)
        frames = self._read_frames(n)
        if frames is None:
            self.stop()
            return None
        freq, time = frames
        arrays: dict[str, np.ndarray] = {}
        if self.include_spectrogram:
            arrays["spectrogram"] = np.stack(freq).astype(np.float32)[:, :, None]
        if self.include_waveform:
            arrays["waveform"] = np.concatenate(time).astype(np.float32)[:, None]
        return arrays

    @staticmethod
    def _result(arrays: dict[str, np.ndarray] | None) -> IteratorResult[dict[str, Tensor]]:
        if arrays is None:
            return IteratorResult(None, True)
        return IteratorResult({key: tensor(a, dtype="float32") for key, a in arrays.items()}, False)

    def _read_frames(self, n: int) -> tuple[list[np.ndarray], list[np.ndarray]] | None:
        """``number_frames`` analyses, or None when the source ends first."""
        freq: list[np.ndarray] = []
        time: list[np.ndarray] = []
        window = self._window
        if window is None:  # the first frame of a run needs a whole window
            window = _exactly(self._source.read(2 * n), 2 * n)
            if window is None:
                return None
            first = True
        else:
            first = False
        for _ in range(self.number_frames):
            if not first:
                block = _exactly(self._source.read(n), n)
                if block is None:
                    return None
                window = np.concatenate([window[n:], block])
            first = False
            if self.include_spectrogram:
                freq.append(self._analyser.frequency_data(window)[: self.column_truncate_length])
            if self.include_waveform:
                time.append(self._analyser.time_domain_data(window, n))
            self._window = window
        return freq, time

    def __repr__(self) -> str:
        state = "streaming" if self.is_streaming else "stopped"
        where = "default input device" if self.source is None else repr(self.source)
        return f"<MicrophoneIterator {where}, {state}>"


def _exactly(block: np.ndarray, n: int) -> np.ndarray | None:
    return block if block.size == n else None


def _positive_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value <= 0:
        raise ValueError(f"{_WHAT}: argument '{name}' must be a positive int, got {value!r}")
    return int(value)


def microphone(
    source: int | str | os.PathLike | Mapping[str, Any] | None = None,
    sample_rate_hz: int | Mapping[str, Any] | None = 44100,
    fft_size: int = 1024,
    column_truncate_length: int | None = None,
    number_frames: int = 43,
    include_spectrogram: bool = True,
    include_waveform: bool = False,
    audio_track_constraints: Mapping[str, Any] | None = None,
    smoothing_time_constant: float = 0,
) -> MicrophoneIterator:
    """A started :class:`MicrophoneIterator` (``tf.data.microphone``).

    ``source``: None for the default input device, a device index (sounddevice's numbering), or an audio file
    path (read with soundfile). TF.js's config dict (camelCase keys, e.g. ``{'fftSize': 1024,
    'numFramesPerSpectrogram': 43, 'includeWaveform': True}``) may be given as the first argument or as the
    second, after the source. ``sample_rate_hz``: the rate of the data; a device must support it (None: the
    device's default rate), a file of another rate is resampled to it (None: the file's own rate). The
    iterator is awaitable (``mic = await microphone()``). Devices need ``pip install 'ndflow[microphone]'`` and
    the PortAudio library; files need ``pip install 'ndflow[audio]'``.
    """
    options: dict[str, Any] = {
        "sample_rate_hz": sample_rate_hz,
        "fft_size": fft_size,
        "column_truncate_length": column_truncate_length,
        "number_frames": number_frames,
        "include_spectrogram": include_spectrogram,
        "include_waveform": include_waveform,
        "audio_track_constraints": audio_track_constraints,
        "smoothing_time_constant": smoothing_time_constant,
    }
    if isinstance(source, Mapping):
        source, options = None, merge_config(source, options, _CONFIG_KEYS, _WHAT)
    elif isinstance(sample_rate_hz, Mapping):
        options = merge_config(sample_rate_hz, {**options, "sample_rate_hz": 44100}, _CONFIG_KEYS, _WHAT)
    iterator = MicrophoneIterator(source, **options)
    iterator.start()
    return iterator
