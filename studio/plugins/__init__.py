"""Plugin API: one registry per extensible kind; built-ins register exactly like plugins.

A registry maps a stable id to an entry: an object, or a ``"module:attribute"`` string that is
imported the first time the entry is asked for (so registering costs nothing at start-up and a
plugin's heavy imports wait until it is used). Plugins are packages that declare an entry point
in the group ``analogy_studio.plugins``; the entry point names a function ``register(registries)``
that receives this module's ``REGISTRIES`` and calls ``register`` on them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

from studio.core.errors import StudioError

ENTRY_POINT_GROUP = "analogy_studio.plugins"


@dataclass
class Registry:
    """Entries of one kind (``families``, ``vet_checks``, ``exporters``, ``transforms``,
    ``baselines``), keyed by a stable id."""

    kind: str
    _entries: dict[str, Any] = field(default_factory=dict)
    _meta: dict[str, dict[str, Any]] = field(default_factory=dict)

    def register(self, entry_id: str, entry: Any, *, replace: bool = False, **meta: Any) -> None:
        if entry_id in self._entries and not replace:
            raise StudioError(f"{self.kind} {entry_id!r} is registered twice")
        self._entries[entry_id] = entry
        self._meta[entry_id] = dict(meta)

    def get(self, entry_id: str) -> Any:
        try:
            entry = self._entries[entry_id]
        except KeyError:
            known = ", ".join(sorted(self._entries)) or "none"
            raise StudioError(f"no {self.kind} called {entry_id!r} (known: {known})") from None
        if isinstance(entry, str):
            module, _, attr = entry.partition(":")
            entry = getattr(importlib.import_module(module), attr)
            self._entries[entry_id] = entry
        return entry

    def meta(self, entry_id: str) -> dict[str, Any]:
        return dict(self._meta.get(entry_id, {}))

    def ids(self) -> list[str]:
        return sorted(self._entries)

    def __contains__(self, entry_id: object) -> bool:
        return entry_id in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.ids())


REGISTRIES: dict[str, Registry] = {
    kind: Registry(kind)
    for kind in ("families", "vet_checks", "exporters", "transforms", "baselines")
}


def registry(kind: str) -> Registry:
    load_plugins()
    return REGISTRIES[kind]


_loaded = False


def _register_builtins(reg: dict[str, Registry]) -> None:
    reg["families"].register(
        "glyph-pmp",
        "studio.generate.glyph_pmp:GlyphPMPGenerator",
        layouts=("two-row", "matrix-3x3", "sequence", "odd-one-out"),
        description="UA progressive matrices over annotated glyphs",
    )
    reg["vet_checks"].register(
        "emergent-rules",
        "studio.vet.emergent:vet_puzzle",
        description="key completes the intended rule; no foil completes any rule of the schema",
    )
    reg["vet_checks"].register(
        "image-features",
        "studio.vet.emergent:feature_warnings",
        description="foils completing a rule over image-derived features (warnings)",
    )
    # KiVA (issue 4): one transform per domain, the trial family and its pixel checks
    for domain in ("color", "size", "rotation", "reflection", "number"):
        reg["transforms"].register(
            domain,
            f"studio.transforms.kiva:{domain.upper()}_TRANSFORM",
            family="kiva",
            description=f"KiVA {domain} transformation over a symbolic picture state",
        )
    # Non-glyph families: ``kind="stimulus"`` families are written by studio.stimuli.split;
    # ``vet_record`` re-checks one item from its record alone ("module:function").
    reg["families"].register(
        "kiva",
        "studio.generate.kiva:KivaGenerator",
        kind="stimulus",
        vet_record="studio.generate.kiva:vet_trial_record",
        modes=("kiva", "kiva-adults"),
        description="KiVA trials: training pair, new object, what / how / extrapolation",
    )
    reg["families"].register(
        "polycube-rotation",
        "studio.stimuli.polycube_task:PolycubeRotationGenerator",
        kind="stimulus",
        vet_record="studio.stimuli.polycube_task:vet_polycube_item",
        description="which of four views is not a rotation of the polycube (k = 3-5 arms)",
    )
    reg["families"].register(
        "shape-composition",
        "studio.stimuli.composition:ShapeCompositionGenerator",
        kind="stimulus",
        vet_record="studio.stimuli.composition:vet_composition_item",
        description="which set of m = 2-5 pieces reassembles the shape",
    )
    reg["families"].register(
        "cube-net",
        "studio.stimuli.cube_net:CubeNetGenerator",
        kind="stimulus",
        vet_record="studio.stimuli.cube_net:vet_cube_net_item",
        description="which cube folds from the marked net (MARVEL reassembling)",
    )
    reg["vet_checks"].register(
        "kiva-ambiguity",
        "studio.vet.ambiguity:vet_transform",
        description="change visible; no other transformation draws the same after-picture",
    )
    reg["vet_checks"].register(
        "kiva-options",
        "studio.vet.ambiguity:vet_options",
        description="no extrapolation distractor draws (nearly) the key's picture",
    )


def load_plugins(extra: Callable[[dict[str, Registry]], None] | None = None) -> None:
    """Register the built-ins, then every installed plugin (once). A plugin that fails to load
    raises StudioError naming it, so a broken plugin is never silently missing."""
    global _loaded
    if not _loaded:
        _loaded = True
        _register_builtins(REGISTRIES)
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            try:
                ep.load()(REGISTRIES)
            except Exception as e:
                raise StudioError(f"plugin {ep.name!r} ({ep.value}) failed to load: {e}") from e
    if extra is not None:
        extra(REGISTRIES)
