"""An item's sheet for the board, from its record: drawn once by its family, then kept.

The project stores a stimulus item's record, not its pictures (a lab database stays small, and
the record is what re-checks and re-draws an item exactly). The board shows each item's sheet,
so the family re-draws it (``Family.render_record``) — a 3D KiVA trial takes a moment — and the
sheet is kept in the user's render cache under a digest of the record, where the sheet that
generation wrote is also put when a split is imported: the curator who generated a set sees it
at once, a colleague after one drawing.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from PIL import Image

from studio.core.errors import StudioError

#: Record fields that do not change what is drawn (a re-vetting writes a new verdict; the
#: part is where the item was put).
NOT_DRAWN = frozenset({"verdict", "part"})


def record_digest(record: Mapping[str, Any]) -> str:
    """What an item's pictures depend on, as a hex digest: the record less :data:`NOT_DRAWN`,
    and the studio's version (a new studio may draw differently: its sheets are drawn anew)."""
    from studio import __version__

    drawn = {k: v for k, v in record.items() if k not in NOT_DRAWN}
    drawn["\0studio"] = __version__
    text = json.dumps(drawn, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class ItemSheets:
    """Sheets of stimulus items by record, kept as PNG files under ``root`` (thread-safe: a
    file is written under a temporary name and renamed into place)."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def path(self, record: Mapping[str, Any]) -> Path:
        d = record_digest(record)
        return self.root / d[:2] / f"{d}.png"

    def cached(self, record: Mapping[str, Any]) -> Image.Image | None:
        """The kept sheet, or None (not drawn yet, or unreadable: it is drawn again)."""
        path = self.path(record)
        try:
            with Image.open(path) as im:
                im.load()
                return im.copy()
        except (OSError, SyntaxError, ValueError):
            return None

    def put(self, record: Mapping[str, Any], sheet: Image.Image) -> None:
        path = self.path(record)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        sheet.save(tmp, format="PNG")
        os.replace(tmp, path)

    def adopt(self, record: Mapping[str, Any], png: str | Path) -> bool:
        """Keep a sheet generation wrote (a split folder's ``sheets/<id>.png``) for this
        record; False when it cannot be read (it is then drawn when first shown)."""
        try:
            with Image.open(png) as im:
                im.load()
                self.put(record, im.copy())
        except (OSError, SyntaxError, ValueError):
            return False
        return True

    def sheet(self, record: Mapping[str, Any]) -> Image.Image:
        """The item's sheet: kept, or drawn by its family now and kept. StudioError names the
        item when its family cannot draw it."""
        got = self.cached(record)
        if got is not None:
            return got
        from studio.stimuli.split import render_record

        try:
            _, sheet = render_record(record)
        except StudioError:
            raise
        except Exception as e:  # a damaged record: the family's code says what it tripped on
            raise StudioError(
                f"item {record.get('id', '?')}: its {record.get('family', '?')} record cannot be "
                f"drawn ({type(e).__name__}: {e})"
            ) from e
        self.put(record, sheet)
        return sheet


__all__ = ["NOT_DRAWN", "ItemSheets", "record_digest"]
