"""The inspector's Definition panel and tags (issue 28, review): schema text is shown as
text. A colleague's schema label or an author's e-mail address is never read as markup."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from studio.core.keys import GlyphKey
from studio.core.schema import Schema
from studio.gui.inspector import Inspector
from studio.store.project import GlyphRecord, TagRecord

pytestmark = pytest.mark.gui


def test_schema_text_and_authors_are_shown_as_text(qtbot, ua_schema: Schema) -> None:
    inspector = Inspector(lambda _g: np.full((64, 64), 255, np.uint8))
    qtbot.addWidget(inspector)
    hostile = replace(
        ua_schema.concept("closure"),
        label='<h1 style="font-size:90px">BIG</h1><img src="file:///etc/passwd">',
        description="Line one.\nLine <two>.",
    )
    inspector.set_concepts({"closure": hostile})
    inspector.show_definition(hostile, None)
    shown = inspector.definition.text()
    assert "&lt;h1" in shown and "<h1" not in shown and "<img" not in shown
    assert "Line one.<br>Line &lt;two&gt;." in shown
    key = GlyphKey(0x25CB, "symbola")
    record = GlyphRecord(id=1, key=key, render_font="symbola", status="ok", reason=None)
    tag = TagRecord(key, "closure", "circle", "Jane Doe <jane@lab.org>", "2026-11-26T10:00:00")
    inspector.show_glyph(record, [tag])
    tip = inspector.tags.item(0, 1).toolTip()
    assert "Jane Doe &lt;jane@lab.org&gt;" in tip
