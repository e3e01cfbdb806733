"""Options several families share, defined once."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from studio.core.family import Option

DESIGN = Option(
    "design",
    "choice",
    "balanced",
    "balanced: every answer could have been the key as far as the answers alone show; "
    "published: the paper's design, kept to reproduce it",
    choices=("balanced", "published"),
)


def size(minimum: int = 32, maximum: int = 4096) -> Option:
    """The picture's side in pixels (not among the Preview tab's controls)."""
    return Option(
        "size",
        "int",
        224,
        "image size in pixels",
        minimum=minimum,
        maximum=maximum,
        preview=False,
    )


def question_candidates(
    rule: str, concept: Callable[[Mapping[str, Any]], str]
) -> Callable[[Mapping[str, Any]], dict[str, Any]]:
    """The baseline layout of a question + four candidates family: the rule is the family's,
    the concept is read from each record by ``concept``."""

    def layout(record: Mapping[str, Any]) -> dict[str, Any]:
        n = len(record.get("candidates", ())) or 4
        return {
            "context": ["question"],
            "rows": (1,),
            "answers": [f"candidate-{k}" for k in range(n)],
            "key": int(record["key"]),
            "rule": rule,
            "concept": concept(record),
            "layout": "question-candidates",
        }

    return layout


__all__ = ["DESIGN", "question_candidates", "size"]
