"""``nf.data.webcam`` over a short video file written with OpenCV from the bundled astronaut image."""

from __future__ import annotations

import asyncio
import builtins
from pathlib import Path

import numpy as np
import pytest

import ndflow as nf
from ndflow.data.webcam import WebcamIterator, crop_box, webcam

cv2 = pytest.importorskip("cv2", reason="OpenCV (ndflow[video]) is not installed")

IMAGE = Path(__file__).resolve().parents[1] / "fixtures" / "media" / "astronaut_256.jpg"
FRAMES = 30
HEIGHT, WIDTH = 192, 256  # a non-square frame, so that width and height cannot be swapped unnoticed


def _arr(t: nf.Tensor) -> np.ndarray:
    return np.asarray(t.data_sync()).reshape(t.shape)


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """30 frames of MJPG in AVI (OpenCV's own encoder: every build has it); frame i is shifted by i pixels."""
    bgr = cv2.imread(str(IMAGE))
    assert bgr is not None and bgr.shape == (256, 256, 3)
    path = tmp_path_factory.mktemp("video") / "astronaut.avi"
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 30.0, (WIDTH, HEIGHT))
    assert writer.isOpened()
    for i in range(FRAMES):
        writer.write(np.ascontiguousarray(np.roll(bgr, i, axis=1)[32 : 32 + HEIGHT]))
    writer.release()
    return path


@pytest.fixture(scope="module")
def decoded(clip: Path) -> list[np.ndarray]:
    """The clip's frames as OpenCV decodes them, converted to RGB: what the iterator must hand out."""
    capture = cv2.VideoCapture(str(clip))
    frames = []
    while True:
        ok, frame = capture.read()
        if not ok:
            break
        frames.append(cv2.cvtColor(frame, cv2.COLOR_BGR2RGB))
    capture.release()
    assert len(frames) == FRAMES
    return frames


def _bilinear_crop(image: np.ndarray, box: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """TensorFlow's crop_and_resize (bilinear, extrapolation 0) for one box, written out in numpy."""
    h, w = image.shape[:2]
    y1, x1, y2, x2 = (float(v) for v in box)
    ch, cw = size
    img = image.astype(np.float64)

    def coords(a: float, b: float, n: int, extent: int) -> np.ndarray:
        if n > 1:
            return a * (extent - 1) + np.arange(n) * (b - a) * (extent - 1) / (n - 1)
        return np.array([0.5 * (a + b) * (extent - 1)])

    ys, xs = coords(y1, y2, ch, h), coords(x1, x2, cw, w)
    out = np.zeros((ch, cw, image.shape[2]))
    for i, y in enumerate(ys):
        if y < 0 or y > h - 1:
            continue
        top, bottom = int(np.floor(y)), int(np.ceil(y))
        dy = y - top
        for j, x in enumerate(xs):
            if x < 0 or x > w - 1:
                continue
            left, right = int(np.floor(x)), int(np.ceil(x))
            dx = x - left
            t = img[top, left] + (img[top, right] - img[top, left]) * dx
            b = img[bottom, left] + (img[bottom, right] - img[bottom, left]) * dx
            out[i, j] = t + (b - t) * dy
    return out.astype(np.float32)


def test_frames_as_decoded(clip: Path, decoded: list[np.ndarray]) -> None:
    it = webcam(clip)
    assert isinstance(it, WebcamIterator) and it.is_streaming and it.summary() == "webcam"
    for i in range(FRAMES):
        result = it.next()
        assert not result.done
        frame = result.value
        assert frame.shape == (HEIGHT, WIDTH, 3) and frame.dtype == "int32"
        np.testing.assert_array_equal(_arr(frame), decoded[i])
        frame.dispose()
    end = it.next()
    assert end.done and end.value is None and not it.is_streaming
    assert it.next().done  # and every call after


def test_rgb_order(clip: Path) -> None:
    it = webcam(clip)
    frame = it.capture()
    mean = _arr(frame).reshape(-1, 3).mean(axis=0)
    frame.dispose()
    it.stop()
    bgr = cv2.imread(str(IMAGE))[32 : 32 + HEIGHT].reshape(-1, 3).mean(axis=0)
    np.testing.assert_allclose(mean, bgr[::-1], atol=3)  # the first frame is the image itself, JPEG'd again


@pytest.mark.parametrize(
    ("rh", "rw", "center"),
    [(96, 128, False), (96, 128, True), (224, 224, True), (224, 224, False), (300, 320, True), (1, 5, True)],
)
def test_resize_matches_crop_and_resize(clip: Path, decoded: list[np.ndarray], rh: int, rw: int, center: bool):
    it = webcam(clip, resize_width=rw, resize_height=rh, center_crop=center)
    frame = it.capture()
    it.stop()
    assert frame.shape == (rh, rw, 3) and frame.dtype == "float32"
    box = crop_box(HEIGHT, WIDTH, rh, rw, center)
    if center:
        top, left = (1 - rh / HEIGHT) / 2, (1 - rw / WIDTH) / 2
        np.testing.assert_allclose(box[0], [top, left, top + rh / HEIGHT, left + rw / WIDTH], rtol=1e-6)
    else:
        np.testing.assert_array_equal(box[0], [0, 0, 1, 1])
    # the same frame through ndflow's op ...
    image = nf.tensor(decoded[0][None].astype(np.float32))
    boxes = nf.tensor(box)
    ind = nf.tensor([0], dtype="int32")
    direct = nf.image.crop_and_resize(image, boxes, ind, [rh, rw], "bilinear")
    np.testing.assert_array_equal(_arr(frame), _arr(direct)[0])
    # ... and through TensorFlow's formula written out in numpy
    np.testing.assert_allclose(_arr(frame), _bilinear_crop(decoded[0], box[0], (rh, rw)), atol=2e-3)
    nf.dispose([frame, image, boxes, ind, direct])


def test_center_crop_is_a_window_of_the_frame(clip: Path, decoded: list[np.ndarray]) -> None:
    """With a box of exactly resize/frame, each output pixel lands on a frame pixel: a plain centred window."""
    it = webcam(clip, {"resizeWidth": 128, "resizeHeight": 96, "centerCrop": True})
    frame = it.capture()
    it.stop()
    top, left = (HEIGHT - 96) // 2, (WIDTH - 128) // 2
    window = decoded[0][top : top + 96, left : left + 128].astype(np.float32)
    # the box's corners sit half a pixel in from the window's border, so it is the window resampled by 95/96
    assert np.abs(_arr(frame) - window).mean() < 6
    frame.dispose()


def test_no_resize_when_the_size_is_the_frames(clip: Path) -> None:
    it = webcam(clip, resize_width=WIDTH, resize_height=HEIGHT, center_crop=True)
    frame = it.capture()
    it.stop()
    assert frame.dtype == "int32" and frame.shape == (HEIGHT, WIDTH, 3)
    frame.dispose()


def test_config_dict_and_keywords_agree(clip: Path) -> None:
    a = webcam(clip, {"resizeWidth": 64, "resizeHeight": 48, "centerCrop": True})
    b = webcam(clip, resize_width=64, resize_height=48, center_crop=True)
    c = webcam(None, {"deviceId": str(clip), "resizeWidth": 64, "resizeHeight": 48, "centerCrop": True})
    fa, fb, fc = a.capture(), b.capture(), c.capture()
    np.testing.assert_array_equal(_arr(fa), _arr(fb))
    np.testing.assert_array_equal(_arr(fa), _arr(fc))
    for it in (a, b, c):
        it.stop()
    nf.dispose([fa, fb, fc])


def test_stop_start_and_close(clip: Path, decoded: list[np.ndarray]) -> None:
    it = webcam(str(clip))
    for _ in range(3):
        it.next().value.dispose()
    it.stop()
    assert not it.is_streaming and it.next().done and it.capture() is None
    it.stop()  # twice is fine
    it.start()  # a file starts over
    frame = it.capture()
    np.testing.assert_array_equal(_arr(frame), decoded[0])
    frame.dispose()
    it.start()  # while open: nothing happens
    frame = it.capture()
    np.testing.assert_array_equal(_arr(frame), decoded[1])
    frame.dispose()
    it.close()
    assert it.next().done
    with webcam(clip) as it2:
        it2.next().value.dispose()
    assert not it2.is_streaming


def test_no_leak_over_the_clip(clip: Path) -> None:
    before = nf.memory().num_tensors
    count = 0
    for resize in ({}, {"resizeWidth": 32, "resizeHeight": 40, "centerCrop": True}):
        with webcam(clip, resize) as it:
            for frame in it:
                assert nf.memory().num_tensors == before + 1  # the frame, nothing else
                frame.dispose()
                count += 1
    assert count == 2 * FRAMES
    assert nf.memory().num_tensors == before


def test_awaitable(clip: Path) -> None:
    async def main() -> tuple:
        it = await webcam(clip, resize_width=8, resize_height=8)
        await it.start()
        first = await it.next()
        second = await it.capture_async()
        frames = [f async for f in it]
        it.stop()
        return first, second, frames

    first, second, frames = asyncio.run(main())
    assert not first.done and first.value.shape == (8, 8, 3)
    assert second.shape == (8, 8, 3) and len(frames) == FRAMES - 2
    nf.dispose([first.value, second, *frames])


def test_to_array_refused(clip: Path) -> None:
    it = webcam(clip)
    with pytest.raises(TypeError, match="cannot convert a video stream to an array"):
        it.to_array()
    it.stop()


def test_bad_sources(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"nf\.data\.webcam: video file '.*missing\.avi' does not exist"):
        webcam(tmp_path / "missing.avi")
    text = tmp_path / "notes.txt"
    text.write_text("not a video\n" * 100)
    with pytest.raises(ValueError, match=r"nf\.data\.webcam: video file '.*notes\.txt' cannot be opened: it is not a"):
        webcam(text)
    for name, data in (("noise.mp4", np.random.default_rng(0).bytes(5000)), ("empty.avi", b"")):
        (tmp_path / name).write_bytes(data)
        with pytest.raises(ValueError, match=f"video file '.*{name}' cannot be opened: it is not a video"):
            webcam(tmp_path / name)
    with pytest.raises(IsADirectoryError, match="is a folder"):
        webcam(tmp_path)
    with pytest.raises(RuntimeError, match=r"nf\.data\.webcam: camera 97 cannot be opened \(no such camera"):
        webcam(97)
    with pytest.raises(ValueError, match="camera index >= 0, got -1"):
        webcam(-1)
    with pytest.raises(TypeError, match="must be a camera index .* got float"):
        webcam(1.5)  # type: ignore[arg-type]


def test_bad_arguments(clip: Path) -> None:
    with pytest.raises(ValueError, match="give both 'resize_width' and 'resize_height'"):
        webcam(clip, resize_width=10)
    with pytest.raises(ValueError, match="'resize_width' must be a positive int or None, got -3"):
        webcam(clip, resize_width=-3, resize_height=4)
    with pytest.raises(ValueError, match="'facing_mode' must be 'user' or 'environment', got 'front'"):
        webcam(clip, {"facingMode": "front"})
    with pytest.raises(ValueError, match="unknown config key 'resize'"):
        webcam(clip, {"resize": 3})
    it = webcam(clip, facing_mode="environment")  # accepted, as TF.js does; OpenCV cannot choose by it
    it.stop()


def test_missing_opencv(clip: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_cv2(name, *args, **kwargs):
        if name == "cv2":
            raise ImportError("No module named 'cv2'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_cv2)
    with pytest.raises(ImportError, match=r"^nf\.data\.webcam needs OpenCV: pip install 'ndflow\[video\]'$"):
        webcam(clip)
