"""Plugin API: one registry per extensible kind; built-ins register exactly like plugins.

A registry maps a stable id to an entry: an object, or a ``"module:attribute"`` string that is
imported the first time the entry is asked for (so registering costs nothing at start-up and a
plugin's heavy imports wait until it is used). Plugins are packages that declare an entry point
in the group ``analogy_studio.plugins``; the entry point names a function ``register(registries)``
that receives this module's ``REGISTRIES`` and calls ``register`` on them.

The ``families`` registry holds :class:`~studio.core.family.Family` definitions (one per
stimulus family: options, generator, record vetting, baseline layout); :func:`family` and
:func:`families` look them up. ``docs/plugins.md`` walks through a plugin that adds a family.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any

from studio.core.errors import StudioError
from studio.core.refs import resolve

if TYPE_CHECKING:
    from studio.core.family import Family

ENTRY_POINT_GROUP = "analogy_studio.plugins"


@dataclass
class Registry:
    """Entries of one kind (``families``, ``vet_checks``, ``transforms``, ``baselines``),
    keyed by a stable id."""

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
            entry = resolve(entry)
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
    kind: Registry(kind) for kind in ("families", "vet_checks", "transforms", "baselines")
}


def registry(kind: str) -> Registry:
    load_plugins()
    return REGISTRIES[kind]


def family(family_id: str) -> Family:
    """The registered family ``family_id``; StudioError names the known ones otherwise."""
    from studio.core.family import Family

    reg = registry("families")
    if family_id not in reg:
        raise StudioError(f"no such family {family_id!r} (known: {', '.join(reg.ids())})")
    entry = reg.get(family_id)
    if not isinstance(entry, Family) or entry.id != family_id:
        raise StudioError(f"family {family_id!r} is not registered as its Family definition")
    return entry


def families(kind: str | None = None) -> list[Family]:
    """Every registered family (of ``kind``, "glyph" or "stimulus"), by id."""
    out = [family(f) for f in registry("families").ids()]
    return [f for f in out if kind is None or f.kind == kind]


def default_family() -> Family:
    """The family a split or set is of when none is named (:attr:`Family.default`): the one
    registered family that says so. StudioError when none or several do (a plugin claiming
    it too is named), so no front end falls back on an id of its own."""
    claimed = [f for f in families() if f.default]
    if len(claimed) != 1:
        said = ", ".join(f.id for f in claimed) or "none"
        raise StudioError(f"exactly one family must be the default; these say so: {said}")
    return claimed[0]


_loaded = False


def builtin_family_packages() -> list[str]:
    """The packages under ``studio/families``, found on disk (or in the frozen app) without
    importing them: each is one family whose ``FAMILY`` is its definition. Adding a built-in
    family is adding its folder (issue 27: no list of them to keep in step)."""
    import importlib.util
    import pkgutil

    # found by its spec, not imported: the registry sits below the families it names
    spec = importlib.util.find_spec("studio.families")
    where = list(spec.submodule_search_locations or []) if spec is not None else []
    return sorted(m.name for m in pkgutil.iter_modules(where) if m.ispkg)


def _register_builtins(reg: dict[str, Registry]) -> None:
    # families: one package each under studio/families (its id the folder's name with "-"),
    # registered lazily by reference: resolving one imports only that package
    for package in builtin_family_packages():
        reg["families"].register(package.replace("_", "-"), f"studio.families.{package}:FAMILY")
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
    # what a built-in family registers besides itself (KiVA: its transforms and pixel checks)
    # it does as a plugin does, ``register(registries)``, in its folder's ``plugin`` module
    for package in builtin_family_packages():
        _register_family_extras(package, reg)
    _register_baselines(reg["baselines"])


def _register_family_extras(package: str, reg: dict[str, Registry]) -> None:
    """Call the family's ``plugin.register`` when its folder has a ``plugin`` module, found
    on disk as :func:`builtin_family_packages` finds the folders (so a family without one is
    not imported); a failure is a StudioError naming the family, as a plugin's is."""
    import importlib.util
    import os
    import pkgutil

    spec = importlib.util.find_spec("studio.families")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    where = [os.path.join(loc, package) for loc in locations]
    if not any(m.name == "plugin" for m in pkgutil.iter_modules(where)):
        return
    name = f"studio.families.{package}.plugin"
    try:
        resolve(f"{name}:register")(reg)
    except Exception as e:
        fid = package.replace("_", "-")
        raise StudioError(f"family {fid!r}: its plugin module failed to register: {e}") from e


# Baselines (issue 5). An entry is a class: ``applies(data) -> reason | None``; trained ones
# ``fit``/``predict``/``embed`` (studio.baselines.trained, torch), training-free ones
# ``prepare``/``predict``/``embed`` (studio.baselines.training_free, numpy). Meta: ``label``,
# ``group`` (the CLI's model group), ``recipe`` (inputs · architecture · training · what it
# tests), ``applies_to``, ``trained``, ``flags_shortcuts`` (its confident right answers flag
# puzzles and groups as shortcut-prone).
_TRAINING = (
    "Adam 3e-3, batch 64, ≤10 epochs, early stopping on the validation loss (patience 2, the "
    "best epoch's weights kept); seeded, the seeds trained side by side"
)
#: the full-context architecture and its partial-input variants learn steadier at 1e-3
_TRAINING_CONTEXT = _TRAINING.replace("Adam 3e-3", "Adam 1e-3")
_BASELINES: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("blind", "studio.baselines.trained:BlindBaseline", {
        "label": "Context-blind CNN", "group": "blind", "trained": True,
        "flags_shortcuts": True, "applies_to": "any",
        "recipe": "Inputs: the answers only, each alone. Architecture: 4-layer CNN (stride 2, "
                  "8-32 channels) + MLP scores each answer; softmax over the answers. "
                  f"Training: cross-entropy on the train part; {_TRAINING}. Tests: whether the "
                  "answer set gives the key away without the context (UA §4.1).",
    }),
    ("context", "studio.baselines.trained:ContextBaseline", {
        "label": "Full-context ResNet + relation module", "group": "context", "trained": True,
        "flags_shortcuts": False, "applies_to": "puzzles with context",
        "recipe": "Inputs: every context frame and each candidate. Architecture: small "
                  "ResNet (8/16/32 channels) per frame; an MLP embeds each row (frames "
                  "concatenated in order); a relation MLP over all row embeddings, the "
                  "candidate completing the last row, gives its score. Training: cross-"
                  f"entropy; {_TRAINING_CONTEXT}. Tests: how far a quick learner gets with the "
                  "whole puzzle.",
    }),
    ("partial-answers", "studio.baselines.trained:PartialAnswers", {
        "label": "Partial input: answers only", "group": "partial", "trained": True,
        "flags_shortcuts": True, "applies_to": "puzzles with context",
        "recipe": "The full-context architecture with every context frame masked (zero "
                  f"embedding). {_TRAINING_CONTEXT}. Tests: answer-set bias, with the context "
                  "model's capacity (VASR partial inputs).",
    }),
    ("partial-row1", "studio.baselines.trained:PartialRow1", {
        "label": "Partial input: row 1 only", "group": "partial", "trained": True,
        "flags_shortcuts": True, "applies_to": "two or more rows",
        "recipe": "The full-context architecture seeing only the first row and each "
                  f"candidate (other context frames masked). {_TRAINING_CONTEXT}. Tests: whether "
                  "the answer follows from row 1 alone, without the rule's second instance.",
    }),
    ("partial-row2", "studio.baselines.trained:PartialRow2", {
        "label": "Partial input: row 2 only", "group": "partial", "trained": True,
        "flags_shortcuts": True, "applies_to": "two or more rows",
        "recipe": "The full-context architecture seeing only the answer's own row (row 2; "
                  "row 3 of a 3×3 matrix) and each candidate. "
                  f"{_TRAINING_CONTEXT}. Tests: whether the answer's row alone gives it away (B "
                  "only, in VASR's terms).",
    }),
    ("pixel-similarity", "studio.baselines.training_free:PixelSimilarity", {
        "label": "Pixel similarity", "group": "similarity", "trained": False,
        "flags_shortcuts": False, "applies_to": "any",
        "recipe": "Inputs: raw 80×80 ink. The answer with the highest mean cosine "
                  "similarity to the given frames of its row (odd-one-out and polycube "
                  "rotation: the lowest, to the others / the question). No training. Tests: "
                  "whether the key simply looks like its row.",
    }),
    ("feature-similarity", "studio.baselines.training_free:FeatureSimilarity", {
        "label": "Feature similarity", "group": "similarity", "trained": False,
        "flags_shortcuts": False, "applies_to": "any",
        "recipe": "As pixel similarity over the fixed encoder: the studio's 12 image "
                  "features (z-scored over the split) + a 16×16 pooled image (no pretrained "
                  "network ships offline). No training.",
    }),
    ("elimination", "studio.baselines.training_free:Elimination", {
        "label": "Distractor elimination", "group": "similarity", "trained": False,
        "flags_shortcuts": False, "applies_to": "puzzles with context",
        "recipe": "VASR §4.2: eliminate the answers most similar to the inputs; choose the "
                  "one least similar (mean cosine over the fixed encoder) to all context "
                  "frames. No training. Tests: whether foils are too close to the context.",
    }),
    ("arithmetic", "studio.baselines.training_free:Arithmetic", {
        "label": "Embedding arithmetic", "group": "similarity", "trained": False,
        "flags_shortcuts": False, "applies_to": "A : A′ :: B : ? (analogy layout, KiVA)",
        "recipe": "VASR §4.2: the answer whose fixed-encoder embedding is most similar "
                  "(cosine) to e(B) + e(A′) − e(A). No training. Tests: whether the change "
                  "A → A′ is a direction in feature space that transfers to B.",
    }),
    ("cnn-mlp", "studio.baselines.trained:CnnMlpBaseline", {
        "label": "CNN+MLP", "group": "spatial", "trained": True,
        "flags_shortcuts": False,
        "applies_to": "spatial families (a question picture and four candidates)",
        "recipe": "Spatial-reasoning paper §4.1.1/§4.2.1: a 4-layer CNN encodes question "
                  "and candidate (composition: each piece, vectors concatenated in random "
                  "slot order, an MLP makes the candidate vector); a 2-layer MLP scores the "
                  f"pair; softmax over four. {_TRAINING}.",
    }),
    ("siamese", "studio.baselines.trained:SiameseBaseline", {
        "label": "Siamese", "group": "spatial", "trained": True,
        "flags_shortcuts": False,
        "applies_to": "families whose candidates are views of the question's object",
        "recipe": "Spatial-reasoning paper §4.1.3: one CNN encodes question and view; "
                  "cosine similarity, trained with binary cross-entropy on 'is a rotation'; "
                  f"the least similar view is the answer. {_TRAINING}.",
    }),
    ("cnn-max", "studio.baselines.trained:CnnMaxBaseline", {
        "label": "CNN+Max", "group": "spatial", "trained": True,
        "flags_shortcuts": False,
        "applies_to": "families whose candidates are sets of pieces",
        "recipe": "Spatial-reasoning paper §4.2.2: a CNN encodes the question, another each "
                  "piece (connected ink regions of the candidate); the dimension-wise "
                  "maximum of the piece vectors is the candidate vector; an MLP scores the "
                  f"pair. {_TRAINING}.",
    }),
    ("resnet18", "studio.baselines.trained:ResNet18Baseline", {
        "label": "ResNet-18 (published)", "group": "published", "trained": True,
        "flags_shortcuts": False, "applies_to": "puzzles with context",
        "recipe": "He et al. 2016's ResNet-18 (7×7/2 stem, max-pool, four stages of two "
                  "basic blocks, batch normalisation) at a quarter width (16-128 channels) "
                  "encodes each panel; as UA's ResNet baseline, an MLP over the context "
                  "panels' and the candidate's features scores it; softmax over the "
                  "candidates. Training: cross-entropy, Adam 1e-3, batch 64, ≤10 epochs, "
                  "early stopping; seeded. Tests: a generic deep vision model on the puzzle "
                  "(UA Table 1's ResNet row).",
    }),
    ("wren", "studio.baselines.trained:WReNBaseline", {
        "label": "WReN (published)", "group": "published", "trained": True,
        "flags_shortcuts": False, "applies_to": "puzzles with context",
        "recipe": "Barrett et al. 2018: a 4-layer CNN (32 channels, stride 2) per panel, "
                  "features tagged with the panel's one-hot position; a 4-layer relation "
                  "network g over every ordered pair of the context panels and the candidate, "
                  "summed; a 3-layer f scores the candidate. Training: cross-entropy, Adam "
                  "1e-3, batch 64, ≤10 epochs, early stopping; seeded. Tests: a relational "
                  "solver of the PGM family (UA Table 1's relational rows).",
    }),
    ("scl", "studio.baselines.trained:SCLBaseline", {
        "label": "SCL (published)", "group": "published", "trained": True,
        "flags_shortcuts": False, "applies_to": "puzzles whose rows have equal length",
        "recipe": "Wu et al. 2020's Scattering Compositional Learner: WReN's panel CNN; its "
                  "64 features split into 8 slices; one attribute network reads each slice "
                  "across a row's panels (the last row completed by the candidate), one "
                  "relation network each row's attribute codes, an MLP over all rows' codes "
                  "scores the candidate. Training: as WReN. Tests: a compositional relational "
                  "solver (UA Table 1's SCL row).",
    }),
    ("probe-tags", "studio.baselines.probes:ProbeTags", {
        "label": "Answers-only probe: tags", "group": "probes", "trained": False,
        "flags_shortcuts": True, "applies_to": "sources whose answers carry annotations or "
                                               "symbolic records",
        "recipe": "Inputs: the answers only, each as its annotation tags (glyphs) or its "
                  "symbolic record's fields (stimulus families); never the context. Model: "
                  "conditional logit (softmax over one puzzle's answers) over one-hot "
                  "(attribute, value) features plus, per attribute, how many other answers "
                  "share the answer's value (left out for odd-one-out). Training: L-BFGS, L2 "
                  "1.0, on the train part; train cross-fitted on halves; seconds on a CPU. "
                  "Tests: whether the answer set's tags give the key away (issue 11; I-RAVEN's "
                  "answers-only check); each prediction names the features that carry it.",
    }),
    ("probe-row1", "studio.baselines.probes:ProbeRow1", {
        "label": "Partial-view probe: row 1 + answers (tags)", "group": "probes",
        "trained": False, "flags_shortcuts": True,
        "applies_to": "glyph puzzles of two or more rows with annotations",
        "recipe": "As the tag probe, plus how each answer relates to the FIRST context row "
                  "alone: per concept, in how many of row 1's glyphs its value appears, and "
                  "the concepts row 1 shows that it lacks. Tests: whether the key follows from "
                  "row 1 without the rule's second instance (issue 24's partial views; "
                  "VASR's partial-input baselines, over the tags).",
    }),
    ("probe-row2", "studio.baselines.probes:ProbeRow2", {
        "label": "Partial-view probe: incomplete row + answers (tags)", "group": "probes",
        "trained": False, "flags_shortcuts": True,
        "applies_to": "glyph puzzles of two or more rows with annotations",
        "recipe": "As the row-1 probe over the answer's own (incomplete) row instead. Tests: "
                  "whether the incomplete row alone says which answer completes it.",
    }),
    ("probe-image", "studio.baselines.probes:ProbeImage", {
        "label": "Answers-only probe: image features", "group": "probes", "trained": False,
        "flags_shortcuts": True, "applies_to": "any",
        "recipe": "As the tag probe, over the studio's image pseudo-tags of each answer "
                  "frame (components, holes, aspect, size, ink, mirror and rotation symmetry; "
                  "studio.vet.features.feature_tags), so no annotations are needed. Tests: "
                  "answer-set leaks the tags do not show.",
    }),
)  # fmt: skip


def _register_baselines(reg: Registry) -> None:
    for baseline_id, entry, meta in _BASELINES:
        reg.register(baseline_id, entry, **meta)


def load_plugins(extra: Callable[[dict[str, Registry]], None] | None = None) -> None:
    """Register the built-ins, then every installed plugin (once). A plugin that fails to load
    raises StudioError naming it, so a broken plugin is never silently missing."""
    global _loaded
    if not _loaded:
        _loaded = True
        try:
            _register_builtins(REGISTRIES)
            for ep in entry_points(group=ENTRY_POINT_GROUP):
                try:
                    ep.load()(REGISTRIES)
                except Exception as e:
                    raise StudioError(f"plugin {ep.name!r} ({ep.value}) failed to load: {e}") from e
        except BaseException:
            # never half-filled registries for the rest of the process: the next call tries
            # again (and says again what failed)
            for r in REGISTRIES.values():
                r._entries.clear()
                r._meta.clear()
            _loaded = False
            raise
    if extra is not None:
        extra(REGISTRIES)
