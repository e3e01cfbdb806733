"""The report's words, without Qt (studio.baselines.present): the dashboard's lines under its
tables say them, and so may a card or the CLI."""

from __future__ import annotations

from studio.baselines.present import count_text


def test_a_count_names_its_noun_in_the_singular_or_the_plural() -> None:
    """The Flagged puzzles and Split flags tabs' lines: one thing in the singular, none or
    several in the plural (an s added unless the plural is given)."""
    assert count_text(1, "shortcut-prone puzzle") == "1 shortcut-prone puzzle"
    assert count_text(3, "shortcut-prone puzzle") == "3 shortcut-prone puzzles"
    assert count_text(0, "shortcut-prone puzzle") == "0 shortcut-prone puzzles"
    assert count_text(1, "rule or concept", "rules or concepts") == "1 rule or concept"
    assert count_text(2, "rule or concept", "rules or concepts") == "2 rules or concepts"
