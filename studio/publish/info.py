"""What a published set says about itself: its licence, authors, description and citation.

A benchmark others may reuse needs all four, and Croissant recommends ``license`` and
``citeAs`` (``mlcroissant`` warns without them, issue 28). They come from ``export-set``'s
``--license``, ``--author``, ``--description`` and ``--cite`` and from the Export dialog's
fields, and go into the dataset card, ``croissant.json`` and ``split.json``'s provenance.

- **Licence**: an SPDX identifier (``CC-BY-4.0``), written to Croissant as its SPDX page. Only
  the identifier's form is checked (letters, digits, ``.``, ``-``, ``+``): the SPDX list grows,
  and a lab may license under one the studio has not heard of. None given: the card says so,
  since without one nobody knows what they may do with the set.
- **Citation**: the text given (BibTeX or a sentence), else one made from the authors (or who
  exported it), the set's name and the year, so ``citeAs`` is never missing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from studio.core.errors import StudioError

#: Identifiers the Export dialog offers (any other SPDX id may be typed).
COMMON_LICENSES = (
    "CC-BY-4.0",
    "CC-BY-SA-4.0",
    "CC-BY-NC-4.0",
    "CC0-1.0",
    "ODC-By-1.0",
    "CDLA-Permissive-2.0",
    "MIT",
    "Apache-2.0",
)
_SPDX_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+-]{0,63}")
#: Longest description or citation kept (characters): a card, not a paper.
MAX_TEXT = 10_000
MAX_AUTHORS = 100


#: Characters that reorder or break what a reader sees (bidirectional controls, line and
#: paragraph separators): a name or a citation shown one way and stored another.
_INVISIBLE = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u2028\u2029"
)


def _clean(text: str, what: str, multiline: bool) -> str:
    text = text.strip()
    if len(text) > MAX_TEXT:
        raise StudioError(f"the {what} is {len(text):,} characters long; at most {MAX_TEXT:,}")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: bytes of an argument that were not UTF-8
        raise StudioError(f"the {what} is not valid UTF-8 text") from None
    allowed = "\n\t" if multiline else ""
    bad = [
        c
        for c in text
        if c not in allowed and (ord(c) < 32 or 127 <= ord(c) < 160 or c in _INVISIBLE)
    ]
    if bad:
        raise StudioError(f"the {what} holds a control character (U+{ord(bad[0]):04X})")
    return text


@dataclass(frozen=True)
class DatasetInfo:
    """Licence (SPDX id), authors, description and citation of a published set; every field
    may be empty. Checked when made: a bad value raises StudioError naming the field."""

    license: str = ""
    authors: tuple[str, ...] = ()
    description: str = ""
    cite: str = ""

    def __post_init__(self) -> None:
        lic = self.license.strip()
        if lic and not _SPDX_ID.fullmatch(lic):
            raise StudioError(
                f"licence {self.license!r} is not an SPDX identifier (letters, digits, '.', "
                f"'-', '+'; for example {', '.join(COMMON_LICENSES[:3])})"
            )
        authors = tuple(_clean(a, "author", False) for a in self.authors)
        authors = tuple(a for a in authors if a)
        if len(authors) > MAX_AUTHORS:
            raise StudioError(f"{len(authors)} authors; at most {MAX_AUTHORS}")
        object.__setattr__(self, "license", lic)
        object.__setattr__(self, "authors", authors)
        object.__setattr__(self, "description", _clean(self.description, "description", True))
        object.__setattr__(self, "cite", _clean(self.cite, "citation", True))

    @classmethod
    def of(
        cls,
        license: str = "",
        authors: Iterable[str] | str = (),
        description: str = "",
        cite: str = "",
    ) -> DatasetInfo:
        """From what a person typed: ``authors`` may be one string, separated by ``;``."""
        if isinstance(authors, str):
            authors = authors.split(";")
        return cls(license, tuple(authors), description, cite)

    @property
    def license_url(self) -> str:
        return f"https://spdx.org/licenses/{self.license}.html" if self.license else ""

    def creators(self, fallback: str) -> list[str]:
        """Who made it: the authors, else the person who exported it."""
        return list(self.authors) or ([fallback] if fallback else [])

    def citation(self, name: str, year: int, fallback_author: str) -> str:
        """The citation given, else "Authors (year). Name. A curated visual-analogy
        benchmark made with Analogy Studio." """
        if self.cite:
            return self.cite
        who = "; ".join(self.creators(fallback_author)) or "Anonymous"
        return (
            f"{who} ({year}). {name}. A curated visual-analogy benchmark made with Analogy Studio."
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "license": self.license,
            "authors": list(self.authors),
            "description": self.description,
            "cite": self.cite,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> DatasetInfo:
        return cls(
            str(d.get("license", "")),
            tuple(str(a) for a in d.get("authors", ())),
            str(d.get("description", "")),
            str(d.get("cite", "")),
        )


__all__ = ["COMMON_LICENSES", "DatasetInfo"]
