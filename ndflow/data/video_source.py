"""Frames from a camera, a video file or a stream URL, read with OpenCV (the ``video`` extra).

:class:`VideoSource` stands in for the browser's ``<video>`` element and ``getUserMedia`` behind
``tf.data.webcam``: it opens the source, hands out RGB ``uint8`` frames ``[height, width, 3]`` one at a time and
releases the capture. OpenCV is imported only when a source is opened, so ``ndflow.data`` imports without it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["VideoSource", "describe_source", "import_cv2"]


def import_cv2(what: str) -> Any:
    """Import OpenCV, or raise the one ImportError that names the extra to install."""
    try:
        import cv2
    except ImportError:
        raise ImportError(f"{what} needs OpenCV: pip install 'ndflow[video]'") from None
    return cv2


def describe_source(source: int | str | os.PathLike) -> str:
    """How an error message names a source: ``camera 0``, ``video file 'clip.avi'`` or ``stream 'rtsp://...'``."""
    if isinstance(source, int):
        return f"camera {source}"
    text = os.fspath(source)
    if "://" in text:
        return f"stream {text!r}"
    return f"video file {text!r}"


class VideoSource:
    """An opened capture: a camera index, a video file path or a URL that OpenCV can read.

    ``open()`` reads the first frame straight away, so that a source that cannot deliver frames fails there,
    with the source named, rather than at the first ``read()``; the frame is kept and returned by that read.
    ``request_size`` (width, height) asks a camera for that resolution, as ``getUserMedia``'s ``width`` and
    ``height`` constraints do; the camera may pick another one, and files ignore it.
    """

    def __init__(self, source: int | str | os.PathLike, what: str, request_size: tuple[int, int] | None = None):
        if isinstance(source, bool) or not isinstance(source, int | str | os.PathLike):
            raise TypeError(
                f"{what}: argument 'source' must be a camera index (int), a video file path or a URL, "
                f"got {type(source).__name__}"
            )
        if isinstance(source, int) and source < 0:
            raise ValueError(f"{what}: argument 'source' must be a camera index >= 0, got {source}")
        self.source = source if isinstance(source, int) else os.fspath(source)
        self.what = what
        self.request_size = request_size
        self.is_camera = isinstance(self.source, int)
        self._capture: Any = None
        self._pending: np.ndarray | None = None

    @property
    def is_open(self) -> bool:
        """Whether a capture is held."""
        return self._capture is not None

    def open(self) -> None:
        """Open the capture (again, after ``release()``: a file starts over) and read its first frame."""
        if self._capture is not None:
            return
        cv2 = import_cv2(self.what)
        name = describe_source(self.source)
        if not self.is_camera and "://" not in self.source:
            path = Path(self.source)
            if not path.exists():
                raise FileNotFoundError(f"{self.what}: {name} does not exist")
            if path.is_dir():
                raise IsADirectoryError(f"{self.what}: {name} is a folder, not a video file")
        capture = cv2.VideoCapture(self.source)
        if not capture.isOpened():
            capture.release()
            raise self._open_error(name, "cannot be opened")
        if not self.is_camera and _fourcc(cv2, capture) in _NOT_VIDEO:
            capture.release()  # FFmpeg's tty demuxer would render a text file as video frames of ANSI art
            raise self._open_error(name, "cannot be opened")
        if self.is_camera and self.request_size is not None:
            capture.set(cv2.CAP_PROP_FRAME_WIDTH, float(self.request_size[0]))
            capture.set(cv2.CAP_PROP_FRAME_HEIGHT, float(self.request_size[1]))
        ok, frame = capture.read()
        if not ok or frame is None:
            capture.release()
            raise self._open_error(name, "gives no frames")
        self._capture = capture
        self._pending = _to_rgb(cv2, frame)

    def _open_error(self, name: str, problem: str) -> Exception:
        if self.is_camera:
            return RuntimeError(f"{self.what}: {name} {problem} (no such camera, or another program holds it)")
        if name.startswith("stream"):
            return RuntimeError(f"{self.what}: {name} {problem} (unreachable, or a format OpenCV cannot decode)")
        return ValueError(f"{self.what}: {name} {problem}: it is not a video that OpenCV can decode")

    def read(self) -> np.ndarray | None:
        """The next RGB ``uint8`` frame ``[height, width, 3]``; None at the end of a file or stream.

        A camera that stops delivering frames is an error (it was unplugged or taken by another program).
        """
        if self._capture is None:
            return None
        if self._pending is not None:
            frame, self._pending = self._pending, None
            return frame
        ok, frame = self._capture.read()
        if not ok or frame is None:
            if self.is_camera:
                raise RuntimeError(f"{self.what}: {describe_source(self.source)} stopped delivering frames")
            return None
        return _to_rgb(import_cv2(self.what), frame)

    def release(self) -> None:
        """Release the capture; reading gives None until ``open()`` is called again."""
        capture, self._capture, self._pending = self._capture, None, None
        if capture is not None:
            capture.release()


# Codecs that FFmpeg reports for files that are not video (text files go to its tty demuxer as 'ansi').
_NOT_VIDEO = {"ansi"}


def _fourcc(cv2: Any, capture: Any) -> str:
    code = int(capture.get(cv2.CAP_PROP_FOURCC)) & 0xFFFFFFFF
    return code.to_bytes(4, "little").decode("latin-1").lower()


def _to_rgb(cv2: Any, frame: np.ndarray) -> np.ndarray:
    """OpenCV's frame (BGR, BGRA or gray) as contiguous RGB ``uint8``."""
    if frame.dtype != np.uint8:  # 16-bit sources: keep the top 8 bits, as a browser shows them
        frame = (frame >> 8).astype(np.uint8) if frame.dtype == np.uint16 else frame.astype(np.uint8)
    if frame.ndim == 2:
        return np.ascontiguousarray(np.repeat(frame[:, :, None], 3, axis=2))
    if frame.shape[2] == 4:
        return cv2.cvtColor(frame, cv2.COLOR_BGRA2RGB)
    if frame.shape[2] == 1:
        return np.ascontiguousarray(np.repeat(frame, 3, axis=2))
    return cv2.cvtColor(frame, cv2.COLOR_BGR2RGB)
