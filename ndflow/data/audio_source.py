"""Mono float32 samples from an audio file (soundfile) or a sound device (sounddevice), for ``nf.data.microphone``.

Both sources hand out samples in order with ``read(n)`` (fewer, or none, at the end of a file). Several
channels are mixed down to one by their mean, as Web Audio's analyser mixes its input to mono (exact for mono
and stereo). A file whose rate differs from the one asked for is resampled with :func:`resample_poly`.
The optional packages are imported when a source opens: soundfile (``ndflow[audio]``) and sounddevice, which
needs the PortAudio library (``ndflow[microphone]``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["AudioDevice", "AudioFile", "import_sounddevice", "import_soundfile", "resample_poly"]

# MediaTrackConstraints that a PortAudio capture has no counterpart for: accepted and ignored.
_IGNORED_CONSTRAINTS = {
    "echoCancellation",
    "noiseSuppression",
    "autoGainControl",
    "latency",
    "sampleSize",
    "groupId",
    "suppressLocalAudioPlayback",
    "voiceIsolation",
}


def import_soundfile(what: str) -> Any:
    """Import soundfile, or raise the one ImportError naming the extra."""
    try:
        import soundfile
    except ImportError:
        raise ImportError(f"{what} needs soundfile to read audio files: pip install 'ndflow[audio]'") from None
    except OSError as exc:  # the libsndfile shared library is missing
        raise ImportError(f"{what}: soundfile cannot load libsndfile ({exc}): pip install 'ndflow[audio]'") from None
    return soundfile


def import_sounddevice(what: str) -> Any:
    """Import sounddevice, or raise one ImportError naming the extra, or the missing PortAudio library."""
    try:
        import sounddevice
    except ImportError:
        raise ImportError(
            f"{what} needs sounddevice to capture from a sound device: pip install 'ndflow[microphone]'"
        ) from None
    except OSError as exc:  # sounddevice imports, but cannot load libportaudio
        raise ImportError(
            f"{what}: capturing from a sound device needs the PortAudio library, which sounddevice could not load "
            f"({exc}). Install PortAudio (Debian/Ubuntu: apt-get install libportaudio2; the sounddevice wheels "
            "for macOS and Windows bundle it), or pass an audio file as 'source'"
        ) from None
    return sounddevice


def _mono(block: np.ndarray) -> np.ndarray:
    block = np.asarray(block, dtype=np.float32)
    if block.ndim == 1:
        return block
    if block.shape[1] == 1:
        return block[:, 0].copy()
    return block.mean(axis=1, dtype=np.float64).astype(np.float32)


def resample_poly(
    x: np.ndarray, rate_in: int, rate_out: int, zero_crossings: int = 10, beta: float = 5.0
) -> np.ndarray:
    """Resample ``x`` (1-D) from ``rate_in`` to ``rate_out`` Hz by polyphase filtering.

    The rational factor ``up / down = rate_out / rate_in`` is applied with one Kaiser-windowed sinc low-pass
    (``zero_crossings`` on each side at the lower of the two rates, Kaiser ``beta``; unit gain at DC), evaluated
    only at the output samples, the way ``scipy.signal.resample_poly`` does. The output has
    ``ceil(len(x) * up / down)`` samples; the signal outside ``x`` counts as zeros.
    """
    g = math.gcd(int(rate_in), int(rate_out))
    up, down = int(rate_out) // g, int(rate_in) // g
    x = np.asarray(x, dtype=np.float64)
    if up == down == 1 or x.size == 0:
        return x.astype(np.float32)
    rate = max(up, down)
    half = zero_crossings * rate
    taps = np.arange(-half, half + 1, dtype=np.float64)
    h = np.sinc(taps / rate) * np.kaiser(2 * half + 1, beta)
    h *= up / h.sum()
    per_phase = -(-(2 * half + 1) // up)
    bank = np.zeros((up, per_phase))  # bank[p, k] = h[p + k * up]
    padded = np.zeros(up * per_phase)
    padded[: h.size] = h
    bank[:, :] = padded.reshape(per_phase, up).T
    n_out = -(-x.size * up // down)
    xpad = np.concatenate([np.zeros(per_phase), x, np.zeros(per_phase)])
    out = np.empty(n_out, np.float64)
    k = np.arange(per_phase)
    for start in range(0, n_out, 65536):
        m = np.arange(start, min(start + 65536, n_out))
        pos = m * down + half  # index into the upsampled signal shifted by the filter's delay
        last = pos // up  # the newest input sample under the filter
        phase = pos - last * up
        idx = last[:, None] - k[None, :] + per_phase
        out[m] = np.einsum("mk,mk->m", bank[phase], xpad[idx])
    return out.astype(np.float32)


class AudioFile:
    """Samples of an audio file that soundfile reads (WAV, FLAC, OGG, MP3 with libsndfile >= 1.1, ...)."""

    def __init__(self, path: str | os.PathLike, sample_rate_hz: int | None, what: str) -> None:
        self.path = os.fspath(path)
        self.what = what
        self.requested_rate = sample_rate_hz
        self.sample_rate: int | None = None
        self._file: Any = None
        self._samples: np.ndarray | None = None  # the whole file, resampled, when the rates differ
        self._position = 0

    @property
    def is_open(self) -> bool:
        return self._file is not None or self._samples is not None

    def open(self) -> None:
        """Open the file from its start; resample it now if its rate is not the one asked for."""
        if self.is_open:
            return
        soundfile = import_soundfile(self.what)
        path = Path(self.path)
        if not path.is_file():
            problem = "is a folder" if path.is_dir() else "does not exist"
            raise FileNotFoundError(f"{self.what}: audio file {self.path!r} {problem}")
        try:
            handle = soundfile.SoundFile(self.path)
        except Exception as exc:  # soundfile.LibsndfileError, RuntimeError in older versions
            raise ValueError(
                f"{self.what}: audio file {self.path!r} cannot be read: not an audio format libsndfile decodes ({exc})"
            ) from None
        rate = int(handle.samplerate)
        wanted = rate if self.requested_rate is None else int(self.requested_rate)
        self.sample_rate = wanted
        if wanted == rate:
            self._file = handle
            return
        try:
            data = handle.read(dtype="float32", always_2d=True)
        finally:
            handle.close()
        self._samples = resample_poly(_mono(data), rate, wanted)
        self._position = 0

    def read(self, n: int) -> np.ndarray:
        """Up to ``n`` next samples (fewer at the end, none after it)."""
        if self._samples is not None:
            out = self._samples[self._position : self._position + n]
            self._position += out.size
            return out
        if self._file is None:
            return np.zeros(0, np.float32)
        return _mono(self._file.read(n, dtype="float32", always_2d=True))

    def discard_stale(self, keep: int) -> None:
        """A file has no stale samples: reading it is not paced by a clock."""

    def close(self) -> None:
        handle, self._file, self._samples = self._file, None, None
        if handle is not None:
            handle.close()


class AudioDevice:
    """Live samples of a sound device through a blocking sounddevice ``InputStream`` (PortAudio).

    ``constraints`` are TF.js's ``audioTrackConstraints`` (MediaTrackConstraints): ``deviceId`` (a sounddevice
    device index or name; ``{'exact': ...}`` or ``{'ideal': ...}`` forms too), ``channelCount`` and
    ``sampleRate`` are used; the browser's processing switches (echoCancellation, noiseSuppression,
    autoGainControl, ...) have no PortAudio counterpart and are ignored.
    """

    def __init__(
        self, device: int | str | None, sample_rate_hz: int | None, constraints: Mapping[str, Any] | None, what: str
    ) -> None:
        self.what = what
        self.device, self.channels, rate = _read_constraints(device, constraints, what)
        if rate is not None and sample_rate_hz is not None and int(rate) != int(sample_rate_hz):
            raise ValueError(
                f"{what}: audio_track_constraints sampleRate {rate} differs from sample_rate_hz {sample_rate_hz}"
            )
        self.requested_rate = sample_rate_hz if sample_rate_hz is not None else rate
        self.sample_rate: int | None = None
        self._stream: Any = None

    @property
    def is_open(self) -> bool:
        return self._stream is not None

    def open(self) -> None:
        """Start capturing; the device must support the rate asked for (TF.js: 'Mismatch in sampling rate')."""
        if self._stream is not None:
            return
        sd = import_sounddevice(self.what)
        try:
            info = sd.query_devices(self.device, "input")
        except (ValueError, sd.PortAudioError) as exc:
            raise RuntimeError(f"{self.what}: no input device {self.device!r}: {exc}") from None
        rate = int(info["default_samplerate"]) if self.requested_rate is None else int(self.requested_rate)
        channels = self.channels or 1
        try:
            sd.check_input_settings(device=self.device, channels=channels, dtype="float32", samplerate=rate)
        except (ValueError, sd.PortAudioError) as exc:
            raise RuntimeError(
                f"{self.what}: input device {info['name']!r} does not support {channels} channel(s) at {rate} Hz "
                f"(its default rate is {info['default_samplerate']:g} Hz): {exc}"
            ) from None
        try:
            stream = sd.InputStream(samplerate=rate, device=self.device, channels=channels, dtype="float32")
            stream.start()
        except sd.PortAudioError as exc:
            raise RuntimeError(f"{self.what}: cannot start capturing from {info['name']!r}: {exc}") from None
        self._stream = stream
        self.sample_rate = rate

    def read(self, n: int) -> np.ndarray:
        """The next ``n`` samples, waiting for the device to record them."""
        if self._stream is None:
            return np.zeros(0, np.float32)
        data, _overflowed = self._stream.read(n)
        return _mono(data)

    def discard_stale(self, keep: int) -> None:
        """Drop what was recorded since the last read except the newest ``keep`` samples, so that the next
        spectrogram covers the time after the call, as the browser's analyser does."""
        if self._stream is None:
            return
        available = int(self._stream.read_available)
        if available > keep:
            self._stream.read(available - keep)

    def close(self) -> None:
        stream, self._stream = self._stream, None
        if stream is not None:
            stream.stop()
            stream.close()


def _read_constraints(
    device: int | str | None, constraints: Mapping[str, Any] | None, what: str
) -> tuple[int | str | None, int | None, int | None]:
    if constraints is None:
        return device, None, None
    if not isinstance(constraints, Mapping):
        raise TypeError(f"{what}: argument 'audio_track_constraints' must be a dict, got {type(constraints).__name__}")
    channels = rate = None
    for key, value in constraints.items():
        if isinstance(value, Mapping):  # {'exact': v} / {'ideal': v}
            value = value.get("exact", value.get("ideal"))
        if key == "deviceId":
            if device is not None and value is not None and value != device:
                raise ValueError(f"{what}: 'source' {device!r} and audio_track_constraints deviceId {value!r} differ")
            device = value if value not in ("", "default") else device
        elif key == "channelCount":
            channels = int(value)
        elif key == "sampleRate":
            rate = int(value)
        elif key not in _IGNORED_CONSTRAINTS:
            raise ValueError(
                f"{what}: unknown audio_track_constraints key {key!r}; used: deviceId, channelCount, sampleRate; "
                f"ignored: {', '.join(sorted(_IGNORED_CONSTRAINTS))}"
            )
    return device, channels, rate
