"""The README fits a page (issue 50): the quick start first, at most 150 lines, every link and
image it shows present, and the long instructions on their own page (docs/your_model.md)."""
from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
YOUR_MODEL = REPO / "docs" / "your_model.md"

#: Markdown links and images to files of the repository (not web addresses, not anchors).
_LOCAL_LINK = re.compile(r"!?\[[^\]]*\]\((?!https?://|#)([^)#\s]+)")


def _local_links(page: Path) -> list[str]:
    return _LOCAL_LINK.findall(page.read_text())


def test_the_readme_fits_a_page():
    lines = README.read_text().splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines; move detail to docs/ (at most 150)"


def test_the_quick_start_comes_first():
    sections = re.findall(r"^## (.+)$", README.read_text(), re.M)
    assert sections and sections[0] == "Quick start", sections


def test_the_readme_links_the_instructions_for_your_model():
    text = README.read_text()
    assert "](docs/your_model.md)" in text
    page = YOUR_MODEL.read_text()
    for command in ("lase-nb record", "--dry-run", "--pilot", "lase-nb notebooks"):
        assert command in page, f"docs/your_model.md should show {command!r}"
    assert "lase-nb record --" not in text, "the record commands live in docs/your_model.md, not the README"


def test_every_local_link_and_image_exists():
    for page in (README, YOUR_MODEL):
        links = _local_links(page)
        assert links, f"{page.name} links nothing"
        missing = [link for link in links if not (page.parent / link).exists()]
        assert not missing, f"{page.relative_to(REPO)} links to missing files: {missing}"
