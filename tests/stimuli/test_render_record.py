"""The render_record helper (issue 27): it finds the item's family by the record's ``family``
and says which family when it cannot re-draw the item."""

from __future__ import annotations

import dataclasses

import pytest

from studio.core.errors import StudioError
from studio.plugins import family, registry
from studio.stimuli.split import render_record


def test_every_stimulus_family_can_redraw_its_items() -> None:
    for fid in ("kiva", "polycube-rotation", "shape-composition", "cube-net", "shape-count"):
        assert callable(family(fid).load("render_record")), fid


def test_an_unknown_family_is_named() -> None:
    with pytest.raises(StudioError, match="no stimulus family 'no-such-family'"):
        render_record({"id": "x-1", "family": "no-such-family"})
    with pytest.raises(StudioError, match="no stimulus family None"):
        render_record({"id": "x-1"})
    with pytest.raises(StudioError, match="no stimulus family 'glyph-pmp'"):
        render_record({"id": "x-1", "family": "glyph-pmp"})


def test_a_family_without_render_record_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    bare = dataclasses.replace(family("cube-net"), id="lab-nets", render_record=None)
    monkeypatch.setitem(registry("families")._entries, "lab-nets", bare)
    with pytest.raises(StudioError, match="family lab-nets cannot re-draw") as raised:
        render_record({"id": "lab-nets-1-00000", "family": "lab-nets", "size": 64})
    assert "lab-nets-1-00000" in str(raised.value)
