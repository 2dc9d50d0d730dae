"""``nf.data.microphone`` from a sound device: sounddevice replaced by a fake that plays a known signal (PortAudio
may be missing where the tests run), and the error when PortAudio is missing."""

from __future__ import annotations

import asyncio
import builtins
import sys
import types

import numpy as np
import pytest

import ndflow as nf
from ndflow.data.microphone import microphone

N = 256


class FakeStream:
    """sounddevice.InputStream's blocking interface, recording what it was asked."""

    instances: list[FakeStream] = []
    signal: np.ndarray = np.zeros(0)
    stale = 0  # what read_available reports before the next read

    def __init__(self, samplerate=None, device=None, channels=None, dtype=None, **kwargs):
        self.samplerate, self.device, self.channels, self.dtype = samplerate, device, channels, dtype
        self.position = 0
        self.reads: list[int] = []
        self.started = self.stopped = self.closed = False
        FakeStream.instances.append(self)

    def start(self):
        self.started = True

    def stop(self):
        self.stopped = True

    def close(self):
        self.closed = True

    @property
    def read_available(self):
        return FakeStream.stale

    def read(self, frames):
        self.reads.append(frames)
        FakeStream.stale = 0
        out = FakeStream.signal[self.position : self.position + frames]
        self.position += frames
        data = np.repeat(out[:, None], self.channels, axis=1).astype(np.float32)
        return data, False


def _fake_sounddevice() -> types.ModuleType:
    sd = types.ModuleType("sounddevice")

    class PortAudioError(Exception):
        pass

    def query_devices(device=None, kind=None):
        if device not in (None, 0, 2, "USB mic"):
            raise ValueError(f"No input device matching {device!r}")
        return {"name": "Fake mic", "default_samplerate": 48000.0, "max_input_channels": 2}

    def check_input_settings(device=None, channels=None, dtype=None, extra_settings=None, samplerate=None):
        if samplerate not in (44100, 48000):
            raise PortAudioError(f"Error opening InputStream: Invalid sample rate [PaErrorCode -9997] ({samplerate})")

    sd.PortAudioError = PortAudioError
    sd.query_devices = query_devices
    sd.check_input_settings = check_input_settings
    sd.InputStream = FakeStream
    return sd


@pytest.fixture
def fake_sd(monkeypatch: pytest.MonkeyPatch):
    t = np.arange(48000 * 3) / 44100
    FakeStream.signal = (0.5 * np.sin(2 * np.pi * 2000 * t)).astype(np.float32)
    FakeStream.instances = []
    FakeStream.stale = 0
    monkeypatch.setitem(sys.modules, "sounddevice", _fake_sounddevice())
    return FakeStream


def _arr(t: nf.Tensor) -> np.ndarray:
    return np.asarray(t.data_sync()).reshape(t.shape)


def test_device_stream(fake_sd) -> None:
    mic = microphone(fft_size=N, number_frames=10, include_waveform=True)
    stream = fake_sd.instances[0]
    assert stream.started and stream.samplerate == 44100 and stream.channels == 1 and stream.dtype == "float32"
    assert mic.is_async and mic.get_sample_rate() == 44100
    value = mic.next()
    assert not value.done
    spec, wave = value.value["spectrogram"], value.value["waveform"]
    assert spec.shape == (10, N, 1) and wave.shape == (10 * N, 1)
    np.testing.assert_array_equal(_arr(wave)[:, 0], fake_sd.signal[: 10 * N])
    # the same samples from a file give the same spectrogram: one analysis for both sources
    assert (_arr(spec)[:, :, 0].argmax(axis=1) == round(2000 / (44100 / (2 * N)))).all()
    nf.dispose(value.value)
    mic.stop()
    assert stream.stopped and stream.closed and mic.next().done


def test_each_next_starts_from_now(fake_sd) -> None:
    mic = microphone(fft_size=N, number_frames=4, include_waveform=True, include_spectrogram=False)
    stream = fake_sd.instances[0]
    nf.dispose(mic.next().value)
    fake_sd.stale = 5000  # recorded while the caller was busy: dropped but for one hop
    value = mic.next().value
    assert stream.reads == [2 * N, N, N, N, 5000 - N, 2 * N, N, N, N]
    start = 5 * N + 5000 - N  # after the first element (2N + 3N read) and the dropped samples
    np.testing.assert_array_equal(_arr(value["waveform"])[:, 0], fake_sd.signal[start : start + 4 * N])
    nf.dispose(value)
    mic.stop()


def test_device_choice_and_constraints(fake_sd) -> None:
    mic = microphone(2, sample_rate_hz=48000, number_frames=2)
    assert fake_sd.instances[-1].device == 2 and fake_sd.instances[-1].samplerate == 48000
    mic.stop()
    constraints = {"deviceId": {"exact": "USB mic"}, "channelCount": 2, "echoCancellation": False}
    mic = microphone({"audioTrackConstraints": constraints, "fftSize": 64, "numFramesPerSpectrogram": 2})
    stream = fake_sd.instances[-1]
    assert stream.device == "USB mic" and stream.channels == 2 and stream.samplerate == 44100
    nf.dispose(mic.capture())
    mic.stop()
    mic = microphone(sample_rate_hz=None, number_frames=2)  # None: the device's default rate
    assert mic.get_sample_rate() == 48000
    mic.stop()


def test_device_errors(fake_sd) -> None:
    with pytest.raises(RuntimeError, match=r"'Fake mic' does not support 1 channel\(s\) at 22050 Hz .*48000 Hz"):
        microphone(sample_rate_hz=22050)
    with pytest.raises(RuntimeError, match=r"no input device 7"):
        microphone(7)
    with pytest.raises(ValueError, match="unknown audio_track_constraints key 'volume'"):
        microphone(audio_track_constraints={"volume": 1})
    with pytest.raises(ValueError, match="sampleRate 48000 differs from sample_rate_hz 44100"):
        microphone(audio_track_constraints={"sampleRate": 48000})


def test_device_in_an_event_loop(fake_sd) -> None:
    async def main():
        mic = await microphone(fft_size=N, number_frames=3)
        with pytest.raises(RuntimeError, match="event loop is running"):
            mic.next()
        value = (await mic.next_async()).value
        other = await mic.capture_async()
        mic.stop()
        return value, other

    value, other = asyncio.run(main())
    assert value["spectrogram"].shape == (3, N, 1)
    nf.dispose([value, other])


def _without_portaudio(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "sounddevice", raising=False)
    real_import = builtins.__import__

    def no_portaudio(name, *args, **kwargs):
        if name == "sounddevice":
            raise OSError("PortAudio library not found")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_portaudio)


def test_portaudio_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    _without_portaudio(monkeypatch)
    with pytest.raises(
        ImportError, match=r"needs the PortAudio library.*\(PortAudio library not found\).*libportaudio2"
    ):
        microphone()


def test_sounddevice_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sounddevice", None)  # import raises ImportError
    with pytest.raises(
        ImportError, match=r"^nf\.data\.microphone needs sounddevice .*pip install 'ndflow\[microphone\]'$"
    ):
        microphone()


def test_real_sounddevice_here() -> None:
    """Where PortAudio is missing (as in CI), the real import ends in the clear error; elsewhere, skip."""
    try:
        import sounddevice  # noqa: F401
    except OSError:
        with pytest.raises(ImportError, match="PortAudio"):
            microphone()
    except ImportError:
        pytest.skip("sounddevice is not installed")
    else:
        pytest.skip("PortAudio is installed here: a real device capture is not tested automatically")
