"""docs/visualize.md's images: each one the page shows is committed, and tools/gen_vis_images.py draws it.

Matplotlib's PNGs differ between machines (fonts, FreeType, the last bits of a training), so the check is on the
names and pixel sizes the script writes, not on the bytes; regenerate with ``python tools/gen_vis_images.py``.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from PIL import Image
from vis_helpers import png_pixels

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "visualize.md"
IMAGES = ROOT / "docs" / "images"


def _referenced() -> list[str]:
    return re.findall(r"!\[[^\]]*\]\(images/([^)]+)\)", PAGE.read_text())


def test_every_image_the_page_shows_is_committed_and_drawn():
    names = _referenced()
    assert len(names) >= 12, names
    for name in names:
        png_pixels(IMAGES / name)


def test_the_script_draws_every_image_at_its_committed_size(tmp_path):
    spec = importlib.util.spec_from_file_location("gen_vis_images", ROOT / "tools" / "gen_vis_images.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    written = module.main(["--out", str(tmp_path)])
    assert sorted(written) == sorted(p.name for p in tmp_path.glob("*.png"))
    assert set(_referenced()) == set(written), "docs/visualize.md and tools/gen_vis_images.py disagree"
    for name in written:
        with Image.open(tmp_path / name) as new, Image.open(IMAGES / name) as committed:
            assert new.size == committed.size, f"{name}: drawn {new.size}, committed {committed.size}: regenerate"
