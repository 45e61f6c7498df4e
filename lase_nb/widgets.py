"""What the notebooks' slider panels share: the CSS names a browser test finds, a change note, a
figure as PNG bytes (chapters 02 and 05)."""

from __future__ import annotations

import html
import io
from typing import Any

__all__ = ["TEXT_CLASS", "NOTE_STYLE", "note_html", "png_bytes"]

#: CSS classes of the HTML widgets (a browser test finds them by these names).
TEXT_CLASS = "lase-point-text"
NOTE_STYLE = "background:#fff3cd;border-left:4px solid #e0a800;padding:2px 8px;margin:4px 0"


def note_html(note: str) -> str:
    """A change note as a highlighted paragraph ("" stays empty)."""
    return f"<p class='lase-change' style='{NOTE_STYLE}'>{html.escape(note)}</p>" if note else ""


def png_bytes(fig: Any, dpi: float) -> bytes:
    """A matplotlib Figure as PNG bytes (fast compression: this runs on every slider move)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, pil_kwargs={"compress_level": 1})
    return buf.getvalue()
