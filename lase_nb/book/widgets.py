"""What the notebooks' slider panels share: the CSS names a browser test finds, a change note, a
figure as PNG bytes (chapters 02 and 05)."""

from __future__ import annotations

import html
import io
from typing import Any

__all__ = ["TEXT_CLASS", "NOTE_STYLE", "note_html", "png_bytes", "live_session"]

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


def live_session(interactive: bool | None = None) -> bool:
    """Whether a chapter makes its widgets: ``interactive`` when given; otherwise True only in a
    kernel a person drives (JupyterLab, Notebook, VS Code), whose execute requests allow input.
    Papermill and nbconvert (nbclient) never allow it, so an executed chapter holds no widget
    output without any parameter."""
    if interactive is not None:
        return bool(interactive)
    try:
        import ipywidgets  # noqa: F401
        from IPython import get_ipython

        kernel = get_ipython().kernel  # None outside IPython: AttributeError
    except (AttributeError, ImportError):
        return False
    return bool(getattr(kernel, "_allow_stdin", False))
