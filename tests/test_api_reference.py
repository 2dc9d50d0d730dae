"""The documentation site's configuration stays complete: every guide and API page is in mkdocs.yml's nav, and
the ops page has a section for every family of ``ndflow.ops``. (CI builds the site itself with
``mkdocs build --strict``: .ci/run.)"""

from __future__ import annotations

import re
from pathlib import Path

import ndflow.ops

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def nav_pages() -> set[str]:
    """The pages named in mkdocs.yml's nav (``- Title: page.md``)."""
    return set(re.findall(r":\s*([\w/.-]+\.md)\s*$", (ROOT / "mkdocs.yml").read_text(), flags=re.M))


def test_every_page_is_in_the_nav() -> None:
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
    assert pages - nav_pages() == set(), "pages missing from mkdocs.yml's nav"
    assert nav_pages() - pages == set(), "mkdocs.yml's nav names pages that do not exist"


def test_every_ops_family_has_a_section() -> None:
    families = set(ndflow.ops.families)  # the modules that ndflow.ops exports from
    documented = set(re.findall(r"^::: ndflow\.ops\.(\w+)$", (DOCS / "api" / "ops.md").read_text(), flags=re.M))
    assert families - documented == set(), "add these families to docs/api/ops.md"
