"""Definitions where annotators tag (issue 28): a concept's or value's description and example
glyphs, from the schema, as tooltips of the schema tree and the inspector's tags, and the
inspector's definition panel. UA's annotators tagged by the paper's definitions; a tooltip
that only said "closure (nominal) — rules: constant, dist3" left ours guessing."""

from __future__ import annotations

import html

from studio.core.keys import GlyphKey
from studio.core.schema import Concept, Value


def text_html(text: str) -> str:
    """Plain text as rich text: escaped, its line breaks kept."""
    return html.escape(text).replace("\n", "<br>")


def example_text(keys: tuple[str, ...]) -> str:
    """The example glyphs as characters with their keys: "○ U+25CB@symbola, …"."""
    out = []
    for text in keys:
        try:
            cp = GlyphKey.parse(text).codepoint
        except ValueError:
            continue
        out.append(f"{chr(cp)} {text}")
    return ", ".join(out)


def concept_tip(c: Concept) -> str:
    """Rich text: the concept, its kind and rules, its definition and examples."""
    rules = ", ".join(r.value for r in c.rules) or "none"
    lines = [f"<b>{html.escape(c.display)}</b> ({c.kind}) — rules: {html.escape(rules)}"]
    if c.description:
        lines.append(text_html(c.description))
    else:
        lines.append("<i>No definition in the schema (Edit ▸ Schema… adds one).</i>")
    if c.examples:
        lines.append(f"Examples: {html.escape(example_text(c.examples))}")
    return "<br>".join(lines)


def value_tip(c: Concept, v: Value, key: int | None, examples: bool = True) -> str:
    """Rich text: the value, the key that tags it, its definition and (with ``examples``)
    its example glyphs as characters."""
    head = f"<b>{html.escape(c.display)} = {html.escape(v.display)}</b>"
    if key is not None:
        head += f": key {key} tags the selection with it"
    lines = [head]
    if v.description:
        lines.append(text_html(v.description))
    if c.description:
        lines.append(f"<i>{html.escape(c.display)}</i>: {text_html(c.description)}")
    if examples and v.examples:
        lines.append(f"Examples: {html.escape(example_text(v.examples))}")
    return "<br>".join(lines)
