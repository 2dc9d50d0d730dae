"""``nf.data.microphone`` over audio files, against a numpy re-computation of Web Audio's AnalyserNode."""

from __future__ import annotations

import asyncio
import builtins
from pathlib import Path

import numpy as np
import pytest

import ndflow as nf
from ndflow.data.audio_source import resample_poly
from ndflow.data.microphone import MicrophoneIterator, microphone

sf = pytest.importorskip("soundfile", reason="soundfile (ndflow[audio]) is not installed")

RATE = 44100
N = 1024  # fft_size: the analyser's FFT is 2 * N long and gives N bins


def _arr(t: nf.Tensor) -> np.ndarray:
    return np.asarray(t.data_sync()).reshape(t.shape)


def _tone(freq: float, rate: int, seconds: float, amplitude: float = 0.5) -> np.ndarray:
    t = np.arange(int(rate * seconds)) / rate
    return amplitude * np.sin(2 * np.pi * freq * t)


def _write(path: Path, x: np.ndarray, rate: int) -> Path:
    sf.write(str(path), x, rate, subtype="FLOAT")
    return path


def reference_spectrogram(x: np.ndarray, n: int, frames: int, elements: int, tau: float = 0.0) -> np.ndarray:
    """The Web Audio specification's analysis, written out independently: frame k of the stream analyses
    samples [k n, (k + 2) n) with a 2n-point Blackman window (alpha 0.16), |DFT| / 2n, smoothing, 20 log10."""
    size = 2 * n
    i = np.arange(size)
    alpha = 0.16
    window = (1 - alpha) / 2 - 0.5 * np.cos(2 * np.pi * i / size) + alpha / 2 * np.cos(4 * np.pi * i / size)
    smoothed = np.zeros(n)
    out = []
    for k in range(frames * elements):
        chunk = x[k * n : k * n + size].astype(np.float64)
        magnitude = np.abs(np.fft.fft(chunk * window))[:n] / size
        smoothed = tau * smoothed + (1 - tau) * magnitude
        with np.errstate(divide="ignore"):
            out.append(20 * np.log10(smoothed))
    return np.asarray(out).reshape(elements, frames, n)


@pytest.fixture(scope="module")
def tone_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray]:
    """A 1 kHz sine at 44.1 kHz, 2.5 s, written as float WAV (read back exactly)."""
    x = _tone(1000.0, RATE, 2.5).astype(np.float32)
    return _write(tmp_path_factory.mktemp("audio") / "tone.wav", x, RATE), x


def test_spectrogram_of_a_tone(tone_file) -> None:
    path, x = tone_file
    mic = microphone(path)
    assert isinstance(mic, MicrophoneIterator) and mic.summary() == "microphone"
    assert mic.get_sample_rate() == RATE
    expected = reference_spectrogram(x, N, 43, 2)
    for element in range(2):
        value = mic.next().value
        assert set(value) == {"spectrogram"}
        spec = value["spectrogram"]
        assert spec.shape == (43, N, 1) and spec.dtype == "float32"
        got = _arr(spec)[:, :, 0]
        # the peak is the bin where 1 kHz falls: 1000 / (44100 / 2048) = 46.4
        assert (got.argmax(axis=1) == round(1000 / (RATE / (2 * N)))).all()
        np.testing.assert_allclose(got, expected[element], rtol=0, atol=1e-4)
        spec.dispose()
    mic.stop()


def test_smoothing_carries_across_elements(tone_file) -> None:
    path, x = tone_file
    x = x * np.linspace(0.1, 1.0, x.size, dtype=np.float32)  # a rising level, so that smoothing shows
    path = _write(path.with_name("rising.wav"), x, RATE)
    mic = microphone(path, smoothing_time_constant=0.8, number_frames=10)
    expected = reference_spectrogram(x, N, 10, 3, tau=0.8)
    assert not np.allclose(expected, reference_spectrogram(x, N, 10, 3))
    for element in range(3):
        spec = mic.capture()["spectrogram"]
        np.testing.assert_allclose(_arr(spec)[:, :, 0], expected[element], rtol=0, atol=1e-4)
        spec.dispose()
    mic.stop()


def test_waveform_truncation_and_keys(tone_file) -> None:
    path, x = tone_file
    mic = microphone(path, {"columnTruncateLength": 232, "includeWaveform": True, "numFramesPerSpectrogram": 20})
    for element in range(2):
        value = mic.next().value
        assert set(value) == {"spectrogram", "waveform"}
        spec, wave = value["spectrogram"], value["waveform"]
        assert spec.shape == (20, 232, 1) and wave.shape == (20 * N, 1) and wave.dtype == "float32"
        # the waveform is the older half of each analysis window: the samples, in order, without gaps
        np.testing.assert_array_equal(_arr(wave)[:, 0], x[element * 20 * N : (element + 1) * 20 * N])
        full = reference_spectrogram(x, N, 20, 2)[element, :, :232]
        np.testing.assert_allclose(_arr(spec)[:, :, 0], full, atol=1e-4)
        nf.dispose(value)
    mic.stop()
    only_wave = microphone(path, include_spectrogram=False, include_waveform=True, fft_size=256, number_frames=4)
    value = only_wave.capture()
    assert set(value) == {"waveform"} and value["waveform"].shape == (4 * 256, 1)
    nf.dispose(value)
    only_wave.stop()


def test_end_of_file_stop_start_and_no_leak(tone_file) -> None:
    path, x = tone_file
    before = nf.memory().num_tensors
    mic = microphone(path, fft_size=512, number_frames=40, include_waveform=True)
    count = 0
    for value in mic:
        assert nf.memory().num_tensors == before + 2
        nf.dispose(value)
        count += 1
    # element k needs (k + 1) * 40 * 512 + 512 samples
    assert count == (x.size - 512) // (40 * 512)
    assert mic.next().done and not mic.is_streaming
    assert nf.memory().num_tensors == before
    mic.start()  # a file starts over, with a fresh analyser
    again = mic.capture()
    np.testing.assert_array_equal(_arr(again["waveform"])[:, 0], x[: 40 * 512])
    nf.dispose(again)
    mic.stop()
    mic.stop()
    assert mic.next().done and mic.capture() is None
    with microphone(path) as m2:
        nf.dispose(m2.next().value)
    assert not m2.is_streaming


def test_short_file_is_done_at_once(tmp_path: Path) -> None:
    path = _write(tmp_path / "short.wav", _tone(440, RATE, 0.5).astype(np.float32), RATE)
    mic = microphone(path)  # one element needs 44 * 1024 samples, about 1 s
    assert mic.next().done


def test_resampled_file(tmp_path: Path) -> None:
    x48 = _tone(1000.0, 48000, 1.2).astype(np.float32)
    path = _write(tmp_path / "tone48k.wav", x48, 48000)
    mic = microphone(path, sample_rate_hz=44100, include_waveform=True)
    assert mic.get_sample_rate() == 44100
    value = mic.capture()
    assert (_arr(value["spectrogram"])[:, :, 0].argmax(axis=1) == 46).all()
    wave = _arr(value["waveform"])[:, 0]
    ideal = _tone(1000.0, 44100, 1.2)[: wave.size]
    np.testing.assert_allclose(wave[100:], ideal[100:], atol=2e-3)  # away from the start's filter ramp
    nf.dispose(value)
    mic.stop()
    native = microphone(path, sample_rate_hz=None)  # None: the file's own rate
    assert native.get_sample_rate() == 48000
    spec = native.capture()["spectrogram"]
    assert (_arr(spec)[:, :, 0].argmax(axis=1) == round(1000 / (48000 / 2048))).all()
    spec.dispose()
    native.stop()


def test_resample_poly_filters_aliases() -> None:
    high = _tone(15000.0, 44100, 0.5)  # above the new Nyquist frequency of 11025 Hz: must vanish
    assert np.abs(resample_poly(high, 44100, 22050)[200:-200]).max() < 0.01
    low = _tone(1000.0, 16000, 0.5)
    up = resample_poly(low, 16000, 44100)
    assert up.size == int(np.ceil(low.size * 44100 / 16000))
    np.testing.assert_allclose(up[200:-200], _tone(1000.0, 44100, 0.5)[: up.size][200:-200], atol=2e-3)
    np.testing.assert_array_equal(resample_poly(low, 16000, 16000), low.astype(np.float32))


def test_stereo_is_mixed_to_mono(tmp_path: Path) -> None:
    left, right = _tone(1000, RATE, 1.2), _tone(3000, RATE, 1.2, amplitude=0.25)
    path = _write(tmp_path / "stereo.wav", np.stack([left, right], axis=1).astype(np.float32), RATE)
    mic = microphone(path, include_waveform=True, number_frames=5)
    wave = mic.capture()
    expected = ((left.astype(np.float32) + right.astype(np.float32)) / 2)[: 5 * N]
    np.testing.assert_allclose(_arr(wave["waveform"])[:, 0], expected, atol=1e-7)
    nf.dispose(wave)
    mic.stop()


def test_awaitable(tone_file) -> None:
    path, _ = tone_file

    async def main():
        mic = await microphone(path, number_frames=8)
        await mic.start()
        first = await mic.next()
        second = await mic.capture_async()
        mic.stop()
        return first, second

    first, second = asyncio.run(main())
    assert not first.done and first.value["spectrogram"].shape == (8, N, 1)
    nf.dispose([first.value, second])


def test_to_array_refused(tone_file) -> None:
    mic = microphone(tone_file[0])
    with pytest.raises(TypeError, match="cannot convert an audio stream to an array"):
        mic.to_array()
    mic.stop()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"fft_size": 1000}, "'fft_size' must be a power of 2 from 16 .* got 1000"),
        ({"fft_size": 8}, "'fft_size' must be a power of 2 from 16 .* got 8"),
        ({"fft_size": 32768}, "'fft_size' must be a power of 2 from 16 .* got 32768"),
        ({"column_truncate_length": 2000}, "'column_truncate_length' must be at most fft_size"),
        ({"number_frames": 0}, "'number_frames' must be a positive int, got 0"),
        ({"smoothing_time_constant": 1.5}, "'smoothing_time_constant' must be between 0 and 1, got 1.5"),
        ({"sample_rate_hz": -1}, "'sample_rate_hz' must be a positive int, got -1"),
        ({"include_spectrogram": False}, "include_spectrogram and include_waveform are both False"),
        ({"audio_track_constraints": {"channelCount": 1}}, "audio_track_constraints apply to a device"),
    ],
)
def test_bad_arguments(tone_file, kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        microphone(tone_file[0], **kwargs)


def test_bad_config_and_sources(tone_file, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown config key 'fft'"):
        microphone(tone_file[0], {"fft": 3})
    with pytest.raises(FileNotFoundError, match=r"nf\.data\.microphone: audio file '.*nothing\.wav' does not exist"):
        microphone(tmp_path / "nothing.wav")
    text = tmp_path / "notes.txt"
    text.write_text("not audio\n" * 50)
    with pytest.raises(ValueError, match=r"audio file '.*notes\.txt' cannot be read: not an audio format"):
        microphone(text)
    with pytest.raises(TypeError, match="argument 'source' must be None .* got float"):
        microphone(1.5)  # type: ignore[arg-type]


def test_missing_soundfile(tone_file, monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_soundfile(name, *args, **kwargs):
        if name == "soundfile":
            raise ImportError("No module named 'soundfile'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_soundfile)
    with pytest.raises(ImportError, match=r"^nf\.data\.microphone needs soundfile .*pip install 'ndflow\[audio\]'$"):
        microphone(tone_file[0])
