"""``nf.data.webcam``: image tensors from a camera, a video file or a stream (tfjs-data's ``WebcamIterator``).

TF.js reads a ``<video>`` element fed by ``getUserMedia``; here OpenCV reads a camera index, a video file or a
URL (:mod:`.video_source`). What each frame becomes follows TF.js:

- without resizing, the frame as it is: int32 ``[height, width, 3]``, RGB;
- with ``resize_width`` and ``resize_height`` that differ from the frame's size, float32
  ``[resize_height, resize_width, 3]`` made by bilinear ``crop_and_resize`` of one box: the whole frame, or with
  ``center_crop`` the centred box covering ``resize / frame`` of each side (the frame plays the part of the
  video element whose size TF.js compares with the resize size). Where the resize size exceeds the frame, that
  box reaches outside it and those samples are 0, as in TF.js.

A camera streams until ``stop()``; a file or stream ends with ``done``. ``stop()`` releases the capture and
``start()`` opens it again (a file starts over); ``close()`` is ``stop()``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, NoReturn

import numpy as np

from ..core.globals import tidy
from ..core.tensor import Tensor
from ..ops.creation import tensor
from ..ops.image import crop_and_resize
from ..ops.shape import expand_dims, reshape
from .config import merge_config
from .lazy_iterator import IteratorResult, LazyIterator
from .results import Completed
from .video_source import VideoSource, describe_source

__all__ = ["WebcamIterator", "webcam"]

_WHAT = "nf.data.webcam"
# TF.js's WebcamConfig keys and ours.
_CONFIG_KEYS = {
    "resizeWidth": "resize_width",
    "resizeHeight": "resize_height",
    "centerCrop": "center_crop",
    "facingMode": "facing_mode",
    "deviceId": "device_id",
}


def crop_box(frame_height: int, frame_width: int, resize_height: int, resize_width: int, center: bool) -> np.ndarray:
    """The normalized ``[y1, x1, y2, x2]`` box TF.js crops before resizing: all of the frame, or the centred part
    of ``resize / frame`` of each side."""
    if not center:
        return np.array([[0.0, 0.0, 1.0, 1.0]], np.float32)
    h_ratio = resize_height / frame_height
    w_ratio = resize_width / frame_width
    top = (1.0 - h_ratio) / 2.0
    left = (1.0 - w_ratio) / 2.0
    return np.array([[top, left, top + h_ratio, left + w_ratio]], np.float32)


class WebcamIterator(LazyIterator[Tensor]):
    """Frames of a camera, video file or stream as tensors (see the module docstring); made by :func:`webcam`."""

    def __init__(
        self,
        source: int | str | os.PathLike = 0,
        resize_width: int | None = None,
        resize_height: int | None = None,
        center_crop: bool = False,
        facing_mode: str | None = None,
    ) -> None:
        self.resize_width = _size(resize_width, "resize_width")
        self.resize_height = _size(resize_height, "resize_height")
        if (self.resize_width is None) != (self.resize_height is None):
            raise ValueError(
                f"{_WHAT}: give both 'resize_width' and 'resize_height' (or neither), got "
                f"resize_width={resize_width!r}, resize_height={resize_height!r}"
            )
        if facing_mode is not None and facing_mode not in ("user", "environment"):
            raise ValueError(f"{_WHAT}: argument 'facing_mode' must be 'user' or 'environment', got {facing_mode!r}")
        self.center_crop = bool(center_crop)
        self.facing_mode = facing_mode
        request = None if self.resize_width is None else (self.resize_width, self.resize_height)
        self._source = VideoSource(source, _WHAT, request_size=request)  # type: ignore[arg-type]

    @property
    def source(self) -> int | str:
        """The camera index, file path or URL read."""
        return self._source.source

    @property
    def is_streaming(self) -> bool:
        """Whether the capture is open (between ``start()`` and ``stop()`` or the end of a file)."""
        return self._source.is_open

    def summary(self) -> str:
        return "webcam"

    def start(self) -> Completed:
        """Open the capture (a file starts over); nothing happens while it is open. Awaitable, as in TF.js."""
        self._closed = False
        self._source.open()
        return Completed()

    def stop(self) -> None:
        """Release the capture; ``next()`` is done until ``start()``."""
        self._source.release()

    def close(self) -> None:
        """:meth:`stop`; ``start()`` may open the capture again."""
        self.stop()
        super().close()

    def next(self) -> IteratorResult[Tensor]:
        """The next frame (see the module docstring); done when stopped or at the end of a file or stream."""
        frame = self._source.read()
        if frame is None:
            self._source.release()
            return IteratorResult(None, True)
        return IteratorResult(self._frame_tensor(frame), False)

    def capture(self) -> Tensor | None:
        """The next frame's tensor (None once done): TF.js's ``capture()``."""
        return self.next().value

    async def capture_async(self) -> Tensor | None:
        """:meth:`capture` as a coroutine, for ``await it.capture_async()``."""
        return self.capture()

    def to_array(self) -> NoReturn:
        """Refused, as in TF.js: a video stream is not collected into a list."""
        raise TypeError(f"{_WHAT}: cannot convert a video stream to an array; iterate over it instead")

    def _needs_resize(self, height: int, width: int) -> bool:
        return self.resize_width is not None and (width != self.resize_width or height != self.resize_height)

    def _frame_tensor(self, frame: np.ndarray) -> Tensor:
        height, width = frame.shape[:2]
        if not self._needs_resize(height, width):
            return tensor(frame.astype(np.int32), dtype="int32")
        rh, rw = int(self.resize_height), int(self.resize_width)  # type: ignore[arg-type]
        box = crop_box(height, width, rh, rw, self.center_crop)

        def resized() -> Tensor:
            image = expand_dims(tensor(frame.astype(np.float32), dtype="float32"), 0)
            out = crop_and_resize(image, tensor(box), tensor([0], dtype="int32"), [rh, rw], "bilinear")
            return reshape(out, [rh, rw, 3])

        try:
            return tidy(resized)
        except Exception as exc:
            raise RuntimeError(f"{_WHAT}: cropping a frame of {describe_source(self.source)} failed: {exc}") from exc

    def __repr__(self) -> str:
        state = "streaming" if self.is_streaming else "stopped"
        return f"<WebcamIterator {describe_source(self.source)}, {state}>"


def _size(value: Any, name: str) -> int | None:
    if value is None or value == 0:  # TF.js treats a missing or 0 size as "not given"
        return None
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
        raise ValueError(f"{_WHAT}: argument '{name}' must be a positive int or None, got {value!r}")
    return int(value)


def webcam(
    source: int | str | os.PathLike | None = 0,
    resize_width: int | Mapping[str, Any] | None = None,
    resize_height: int | None = None,
    center_crop: bool = False,
    facing_mode: str | None = None,
    device_id: int | str | None = None,
) -> WebcamIterator:
    """A started :class:`WebcamIterator` over a camera index, a video file or a URL (``tf.data.webcam``).

    ``source`` takes the place of TF.js's video element: a camera index (default camera 0), a video file path
    or a stream URL; None (TF.js's missing element, ``tf.data.webcam(null, config)``) is camera 0. The second
    argument may be TF.js's config dict instead, e.g.
    ``webcam(0, {'resizeWidth': 224, 'resizeHeight': 224, 'centerCrop': True})``. ``device_id`` (TF.js's
    ``deviceId``) picks the camera instead of ``source`` when given. ``facing_mode`` is checked as in TF.js
    ('user' or 'environment') but OpenCV cannot choose a camera by it. The iterator is awaitable
    (``it = await webcam()``). Needs OpenCV (``pip install 'ndflow[video]'``).
    """
    options: dict[str, Any] = {
        "resize_width": resize_width,
        "resize_height": resize_height,
        "center_crop": center_crop,
        "facing_mode": facing_mode,
        "device_id": device_id,
    }
    if isinstance(resize_width, Mapping):
        options = merge_config(resize_width, {**options, "resize_width": None}, _CONFIG_KEYS, _WHAT)
    chosen = options.pop("device_id")
    if chosen is not None and chosen != "":
        source = chosen
    if source is None:
        source = 0
    iterator = WebcamIterator(source, **options)
    iterator.start()
    return iterator
