"""KiVA trials (§3.1–3.2; appendices A, B.2 and E): a training pair, a new object, three questions.

A trial shows a source object before and after one transformation (the *training pair*) and a
new object (the *test input*), and asks:

1. **what** changed — four options: the right domain, two other domains, "no change"; plus
   "doesn't apply";
2. **how** it changed — three values of the domain; plus "doesn't apply";
3. **extrapolation** — three before/after pictures of the new object: the same change (the
   key), another change of the same domain, no change; plus "doesn't apply".

The first four options of each question are shuffled (the shuffled ids and the key's index are
recorded); "doesn't apply" is always last. A set-level share of trials (10 % by default, exactly
``round(share × count)`` of them, at seeded positions) are *no-change* trials (appendix B.2): the
training pair and the key show no change, the transformation that would have been shown and
its sibling become distractors, "no change" is the answer to the first question and "doesn't
apply" to the second (there is no change to specify).

Modes (appendix E): in **kiva** the test input starts at the training pair's input value (3
bowls → 2; 3 apples → ?) — for colour both start in the same named colour; in **kiva-adults** it
starts at another value (3 → 2 shown, 4 → ? asked; another colour, size, orientation, mirror
state), so the rule has to be abstracted as a function.

**Narrowing before sampling.** A (value, training input, test input) choice is offered only when
no other candidate transformation of the mode, nor "no change", gives the same picture on either
input, known symbolically (:func:`~studio.families.kiva.transforms.same_picture`): +1 and ×2 of one
object, −1 and ÷2 of two, −2 and ÷3 of three are never sampled there (the paper's "additional
constraints in the sampling for number"). In KiVA-adults a half turn always draws what a
reflection across both axes draws, so neither is ever offered there; :attr:`KivaGenerator.narrowed`
says so. **Vetting after rendering.** Every trial is then vetted on its pictures
(:mod:`studio.families.kiva.ambiguity`): the change visible on both objects, no confusable
transformation for either object (a round object turned, a symmetric one mirrored), the options
distinct. A trial that fails is drawn again; :attr:`KivaGenerator.rejections` counts why.

**Designs** (``design``, recorded per trial). In ``"published"`` the key of the extrapolation
question is the shown change, the sibling change and "no change" the distractors, and 10 % of
trials are no-change trials — so the option that shows no change is the key one time in ten and
the shown change sits on the key every time it appears while its siblings mostly do not: the
answers alone find the key well above chance (issue 11: ``color:red`` and ``size:x2`` flagged).
``"balanced"`` (the default) chooses the answer set first and the key uniformly among it, the
I-RAVEN way: the two changes are drawn as an unordered pair (either may be the shown one: only
pairs where each is a valid trial with the other as its sibling are offered, and which is shown
is a fair coin), and a third of the trials are no-change trials, so every option — each change
and "no change" — is the key one time in three, whatever it shows. A draw refused only for the
training object's pictures keeps its answers and draws another training object, so refusals do
not tilt which change is shown.

Determinism: the set's no-change positions and domain schedule come from one seeded generator,
each trial from its own (seed, index) generator, so trial i is the same whatever ``count``.

Core layer: no Qt, no torch.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from PIL import Image, ImageDraw

from studio.core.errors import StudioError
from studio.core.verdict import Finding, Verdict
from studio.families.kiva.ambiguity import COMPARE_SIZE, confusable, vet_options, vet_transform
from studio.families.kiva.transforms import (
    COLORS,
    DOMAIN_LABELS,
    DOMAINS,
    MAX_COUNT,
    MODES,
    NO_CHANGE_LABEL,
    VALUES,
    PictureCache,
    StateRenderer,
    StimulusState,
    TransformSpec,
    apply,
    same_picture,
    specs,
    try_apply,
)
from studio.stimuli.items import StimulusItem
from studio.stimuli.loop import ordered_chunks, pool_workers
from studio.stimuli.sheet import label_font

if TYPE_CHECKING:
    from studio.render3d.objects import Object3D
    from studio.render3d.scene import Camera, Renderer

FAMILY = "kiva"
NO_CHANGE = "no-change"
DOESNT_APPLY = "doesnt-apply"
DOESNT_APPLY_LABEL = "doesn't apply"
OPTION_LETTERS = ("A", "B", "C", "D")
#: Answer-set designs (module docstring); the first is the default.
DESIGNS: tuple[str, ...] = ("balanced", "published")
#: The no-change share of each design when none is given.
NO_CHANGE_SHARES: dict[str, float] = {"balanced": 1 / 3, "published": 0.1}
#: Balanced design: training objects tried for one answer set refused only for its pictures.
TRAIN_OBJECT_TRIES = 6
#: Draws of one trial before generation gives up and says which checks kept failing.
MAX_ATTEMPTS = 60

PROMPTS = {  # appendix A.2, shortened
    "what": "Which rule best describes the left-to-right transformation on top?",
    "how": "Which rule best describes, more precisely, how the picture on the top changed?",
    "extrapolate": (
        "Which of the left-to-right transformations (A), (B) or (C) on the bottom is the same as "
        "the transformation on top? Answer (D) if none applies."
    ),
}

#: Input values a trial may start from, per domain (see the module docstring for the modes).
SIZE_STARTS: tuple[tuple[float, float], ...] = (
    (1.0, 1.0),
    (0.5, 0.5),
    (2.0, 2.0),
    (1.0, 0.5),
    (0.5, 1.0),
    (2.0, 1.0),
    (1.0, 2.0),
)
ROTATION_STARTS: tuple[float, ...] = (0.0, 45.0, 90.0, 135.0, 180.0, -135.0, -90.0, -45.0)
REFLECTION_STARTS: tuple[tuple[bool, bool], ...] = (
    (False, False),
    (True, False),
    (False, True),
    (True, True),
)


@dataclass(frozen=True)
class Choice:
    """One allowed (value, training input, test input) of a domain, with the test's sibling
    values (for the extrapolation distractor)."""

    spec: TransformSpec
    train: StimulusState
    test: StimulusState
    siblings: tuple[TransformSpec, ...]


def _input_pairs(domain: str, mode: str) -> list[tuple[StimulusState, StimulusState]]:
    """(training input, test input) pairs of a domain: equal in kiva, different in kiva-adults
    (there the training input is the plain picture except for colour and number)."""
    same = mode == "kiva"
    if domain == "color":
        names = list(COLORS)
        return [
            (StimulusState(color=a), StimulusState(color=b))
            for a in names
            for b in names
            if (a == b) == same
        ]
    if domain == "number":
        counts = range(1, MAX_COUNT + 1)
        return [
            (StimulusState(count=a), StimulusState(count=b))
            for a in counts
            for b in counts
            if (a == b) == same
        ]
    plain = StimulusState()
    if domain == "size":
        others = [StimulusState(scale=s) for s in SIZE_STARTS]
    elif domain == "rotation":
        others = [StimulusState(rotation=r) for r in ROTATION_STARTS]
    else:
        others = [StimulusState(reflection=f) for f in REFLECTION_STARTS]
    if same:
        return [(plain, plain)]
    return [(plain, o) for o in others if o != plain]


def _confusions(
    spec: TransformSpec, state: StimulusState, pool: Sequence[TransformSpec]
) -> str | None:
    """Why ``spec`` on ``state`` is ambiguous for any object (None when it is not)."""
    after = try_apply(spec, state)
    if after is None:
        return "cannot apply"
    if same_picture(after, state):
        return "draws no change"
    for other in pool:
        if other == spec:
            continue
        alt = try_apply(other, state)
        if alt is not None and same_picture(alt, after):
            return f"draws what {other.id} draws"
    return None


def domain_choices(
    domain: str, mode: str, pool: Sequence[TransformSpec]
) -> tuple[list[Choice], dict[str, str]]:
    """Every allowed choice of a domain, and for each value with none the reason (narrowing).

    The training input must show the value unambiguously (:func:`_confusions` against the
    mode's other transformations and "no change"); on the test input the value must change
    something and leave another value of the domain that draws neither the key nor the input
    (the extrapolation distractor). That the key may look like another rule's result on the
    test input does not make the trial ambiguous — the rule is read from the training pair —
    so it is vetted as a warning only (×3 is then shown as 2 → 6 and asked as 1 → ?)."""
    choices: list[Choice] = []
    why_not: dict[str, str] = {}
    values = MODES[mode][domain]
    for value in values:
        spec = TransformSpec(domain, value)
        first_reason = None
        for train, test in _input_pairs(domain, mode):
            key = try_apply(spec, test)
            if key is None or try_apply(spec, train) is None:
                continue
            reason = _confusions(spec, train, pool)
            if reason is not None:
                reason += f" on the training input ({train.describe()})"
            elif same_picture(key, test):
                reason = f"draws no change on the test input ({test.describe()})"
            siblings: tuple[TransformSpec, ...] = ()
            if reason is None:
                siblings = tuple(
                    TransformSpec(domain, v)
                    for v in values
                    if v != value
                    and (alt := try_apply(TransformSpec(domain, v), test)) is not None
                    and not same_picture(alt, key)
                    and not same_picture(alt, test)
                )
                if not siblings:
                    reason = "leaves no other change of its domain to offer as a distractor"
            if reason is None:
                choices.append(Choice(spec, train, test, siblings))
            elif first_reason is None:
                first_reason = reason
        if not any(c.spec == spec for c in choices):
            why_not[spec.id] = first_reason or f"applies to no (training, test) inputs of {mode}"
    return choices, why_not


def swappable_choices(choices: Sequence[Choice]) -> list[Choice]:
    """The choices narrowed to siblings that could as well have been the shown change: b is kept
    as a's sibling only when (b, same inputs) is a choice with a among its siblings, so the pair
    {a, b} can be drawn either way round (the balanced design). Choices left with no sibling go."""
    index = {(c.spec, c.train, c.test): c for c in choices}
    out = []
    for c in choices:
        siblings = tuple(
            b
            for b in c.siblings
            if (other := index.get((b, c.train, c.test))) is not None and c.spec in other.siblings
        )
        if siblings:
            out.append(Choice(c.spec, c.train, c.test, siblings))
    return out


def design_choices(
    mode: str, design: str, domains: Sequence[str]
) -> tuple[dict[str, list[Choice]], dict[str, str]]:
    """Per domain the choices a design draws from (the balanced design keeps the swappable
    ones), and why each value left out was narrowed away. The generator and the partial-view
    solver (:mod:`studio.families.kiva.partial`) read the same space, so the solver knows
    exactly what the design could have drawn."""
    pool = tuple(specs(mode))
    out: dict[str, list[Choice]] = {}
    narrowed: dict[str, str] = {}
    for d in domains:
        choices, why_not = domain_choices(d, mode, pool)
        out[d] = swappable_choices(choices) if design == "balanced" else choices
        narrowed.update(why_not)
    return out, narrowed


def _resolve_object(name: str) -> Object3D:
    from studio.render3d.objects import library_names, library_object, load_object

    if name in library_names():
        return library_object(name)
    path = Path(name)
    if path.suffix and path.exists():
        return load_object(path)
    known = ", ".join(library_names()) or "none"
    raise StudioError(f"no object {name!r}: neither a library object ({known}) nor a mesh file")


def _camera_json(camera: Camera) -> dict[str, Any]:
    return dataclasses.asdict(camera)


def _camera_from(data: Mapping[str, Any] | None) -> Camera:
    from studio.render3d.scene import Camera

    return Camera(**dict(data)) if data else Camera()


class KivaGenerator:
    """KiVA trials, deterministic for a seed (see the module docstring).

    ``objects`` are library object names or mesh file paths (default: the whole library; at
    least two, since the test object differs from the training one); ``domains`` limits the
    transformations shown (the first question still offers every domain). After ``items`` has
    run, ``rejections`` counts refused draws by failed check and ``narrowed`` names values never
    offered, with why."""

    family = FAMILY

    def __init__(
        self,
        mode: str = "kiva",
        no_change_share: float | None = None,
        size: int = 224,
        objects: Sequence[str] | None = None,
        domains: Sequence[str] | None = None,
        camera: Camera | None = None,
        design: str = "balanced",
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
        if design not in DESIGNS:
            raise ValueError(f"design must be one of {', '.join(DESIGNS)}, not {design!r}")
        self.design = design
        if no_change_share is None:
            no_change_share = NO_CHANGE_SHARES[design]
        if not 0.0 <= float(no_change_share) <= 1.0:
            raise ValueError(f"no_change_share must be within 0..1, not {no_change_share}")
        if not 8 <= int(size) <= 4096:
            raise ValueError(f"size must be within 8..4096, not {size}")
        wanted = list(DOMAINS) if domains is None else list(domains)
        unknown = [d for d in wanted if d not in DOMAINS]
        if unknown or not wanted:
            raise ValueError(
                f"domains must be some of {', '.join(DOMAINS)} (got {', '.join(wanted) or 'none'})"
            )
        self.mode = mode
        self.no_change_share = float(no_change_share)
        self.size = int(size)
        self.domains = tuple(d for d in DOMAINS if d in wanted)
        if objects is None:
            from studio.render3d.objects import library_names

            objects = library_names()
        self.objects = tuple(dict.fromkeys(str(o) for o in objects))
        if len(self.objects) < 2:
            raise ValueError("a KiVA trial needs at least two objects (training and test)")
        self.camera = camera
        self.candidates = tuple(specs(mode))
        self.rejections: Counter[str] = Counter()
        self._choices, self.narrowed = design_choices(mode, design, self.domains)
        self._by_inputs = {
            (c.spec, c.train, c.test): c for d in self.domains for c in self._choices[d]
        }
        empty = [d for d in self.domains if not self._choices[d]]
        if empty:
            raise ValueError(f"no trial of {', '.join(empty)} can be made in {mode} mode")

    # ---- the set ------------------------------------------------------------------------
    def plan(self, count: int, seed: int) -> tuple[list[str], list[bool]]:
        """The domain of each trial (balanced: counts differ by at most one, order seeded) and
        which are no-change trials (exactly ``round(share × count)``, positions seeded)."""
        rng = np.random.default_rng(np.random.SeedSequence([seed, 0x4B495641]))
        schedule: list[str] = []
        while len(schedule) < count:
            schedule += [self.domains[i] for i in rng.permutation(len(self.domains))]
        n_none = round(self.no_change_share * count)
        flags = [False] * count
        for i in rng.choice(count, size=n_none, replace=False) if count else []:
            flags[int(i)] = True
        return schedule[:count], flags

    def items(
        self,
        count: int,
        seed: int,
        progress: Callable[[int, int], None] | None = None,
        *,
        renderer: Renderer | None = None,
        workers: int | None = None,
        keep_pictures: bool = True,
    ) -> Iterator[StimulusItem]:
        """Yield ``count`` vetted trials, ids ``kiva-{seed}-{i:05d}``, in order. The renderers
        are made here, in the calling thread, and closed when the iteration ends (a
        ``renderer`` of ``size`` passed in is used and left open, and everything is drawn in
        this thread). ``workers``: processes drawing the trials (default
        :func:`default_workers`: every core for a large set; 1 draws in this thread);
        ``keep_pictures`` keeps 3D pictures across trials (:class:`PictureCache`; off, every
        picture is drawn anew). The bytes are the same for any number of workers and either
        way of keeping pictures: a picture depends only on what is drawn
        (:func:`~studio.render3d.scene.ordered_scene_class` fixes pyrender's draw order).
        Raises StudioError when a trial cannot be made in :data:`MAX_ATTEMPTS` draws (the
        message names the checks)."""
        if count < 0:
            raise ValueError(f"count must be at least 0, not {count}")
        if renderer is not None and renderer.size != self.size:
            raise ValueError(
                f"the renderer makes {renderer.size} px images, the trials {self.size} px"
            )
        n_workers = 1 if renderer is not None else default_workers(count, workers)
        if n_workers > 1:
            yield from self._pooled_items(count, seed, progress, n_workers, keep_pictures)
            return
        from studio.render3d.scene import Renderer

        own = renderer is None
        renderer = renderer or Renderer(self.size)
        compare = Renderer(COMPARE_SIZE) if self.size > COMPARE_SIZE else renderer
        try:
            run = _Run(self, (renderer, compare), keep_pictures)
            for i, item in enumerate(run.trials(count, seed, range(count))):
                yield item
                if progress is not None:
                    progress(i + 1, count)
        finally:
            if compare is not renderer:
                compare.close()
            if own:
                renderer.close()

    def _pooled_items(
        self,
        count: int,
        seed: int,
        progress: Callable[[int, int], None] | None,
        n_workers: int,
        keep_pictures: bool,
    ) -> Iterator[StimulusItem]:
        """:meth:`items` over a process pool (:func:`~studio.stimuli.loop.ordered_chunks`,
        chunks of :data:`POOL_CHUNK` trials), yielded in index order; each worker's rejection
        counts are added to :attr:`rejections`."""
        done = 0
        results = ordered_chunks(
            count,
            POOL_CHUNK,
            n_workers,
            _worker_trials,
            (count, seed),
            _init_worker,
            (self, keep_pictures),
            "KiVA trials",
        )
        for chunk in results:
            for item, rejected in chunk:
                self.rejections.update(rejected)
                yield item
                done += 1
                if progress is not None:
                    progress(done, count)

    # ---- one trial ------------------------------------------------------------------------
    def _pick(
        self, rng: np.random.Generator, domain: str
    ) -> tuple[TransformSpec, Choice, TransformSpec, str, str]:
        """One draw of a trial's symbolic content: (shown change, its choice of inputs, the
        sibling change, training object, test object). Balanced design: the pair is swapped
        on a fair coin, so either change of the pair is the shown one equally often."""
        by_value: dict[TransformSpec, list[Choice]] = {}
        for c in self._choices[domain]:
            by_value.setdefault(c.spec, []).append(c)
        values = list(by_value)
        spec = values[int(rng.integers(len(values)))]
        options = by_value[spec]
        choice = options[int(rng.integers(len(options)))]
        pick = rng.choice(len(self.objects), size=2, replace=False)
        train_name, test_name = self.objects[int(pick[0])], self.objects[int(pick[1])]
        sibling = choice.siblings[int(rng.integers(len(choice.siblings)))]
        if self.design == "balanced" and rng.random() < 0.5:
            spec, sibling = sibling, spec
            choice = self._by_inputs[(spec, choice.train, choice.test)]
        return spec, choice, sibling, train_name, test_name

    def records(self, count: int, seed: int) -> Iterator[dict[str, Any]]:
        """The symbolic records of ``count`` trials without rendering or pixel vetting (no
        fits or measures; a rendered trial may differ where a draw was refused for its
        pictures): for answer-set audits of thousands of trials in seconds."""
        schedule, no_change = self.plan(count, seed)
        camera = self.camera
        for i in range(count):
            rng = np.random.default_rng(np.random.SeedSequence([seed, i]))
            spec, choice, sibling, train_name, test_name = self._pick(rng, schedule[i])
            states = {
                "train_before": choice.train,
                "train_after": choice.train if no_change[i] else apply(spec, choice.train),
                "test_before": choice.test,
            }
            drawn = _Drawn(states, {}, [], {}, Verdict())
            names = {n: _NamedOnly(n) for n in (train_name, test_name)}
            record, _ = _record(
                self.mode,
                schedule[i],
                spec,
                choice,
                sibling,
                no_change[i],
                train_name,
                test_name,
                names,  # type: ignore[arg-type]
                drawn,
                camera,  # type: ignore[arg-type]
                self.size,
                rng,
            )
            record.update(seed=seed, index=i, design=self.design)
            yield record

    def _trial(
        self,
        index: int,
        seed: int,
        domain: str,
        no_change: bool,
        rng: np.random.Generator,
        renderers: tuple[Renderer, Renderer],
        camera: Camera,
        objects: dict[str, Object3D],
        pictures: PictureCache | None = None,
    ) -> StimulusItem:
        failed: Counter[str] = Counter()
        for attempt in range(1, MAX_ATTEMPTS + 1):
            spec, choice, sibling, train_name, test_name = self._pick(rng, domain)

            def draw(
                train_name: str,
                spec: TransformSpec = spec,
                choice: Choice = choice,
                sibling: TransformSpec = sibling,
                test_name: str = test_name,
            ) -> _Drawn:
                for name in (train_name, test_name):
                    if name not in objects:
                        objects[name] = _resolve_object(name)
                return _draw_trial(
                    self.mode,
                    spec,
                    choice,
                    sibling,
                    no_change,
                    objects[train_name],
                    objects[test_name],
                    renderers,
                    camera,
                    self.size,
                    self.candidates,
                    pictures,
                )

            trial = draw(train_name)
            tries = 1
            while (
                self.design == "balanced"
                and not trial.verdict.valid
                and tries < TRAIN_OBJECT_TRIES
                and all(c.check.startswith("train-") for c in trial.verdict.errors)
            ):
                # the answers are fine; only the training object drew the change badly
                for c in trial.verdict.errors:
                    self.rejections[c.check] += 1
                others = [o for o in self.objects if o != test_name]
                train_name = others[int(rng.integers(len(others)))]
                trial = draw(train_name)
                tries += 1
            if not trial.verdict.valid:
                for c in trial.verdict.errors:
                    self.rejections[c.check] += 1
                    failed[c.check] += 1
                continue
            record, order = _record(
                self.mode,
                domain,
                spec,
                choice,
                sibling,
                no_change,
                train_name,
                test_name,
                objects,
                trial,
                camera,
                self.size,
                rng,
            )
            record.update(seed=seed, index=index, attempts=attempt, design=self.design)
            images = trial.images(order)
            return StimulusItem(
                id=f"{FAMILY}-{seed}-{index:05d}",
                family=FAMILY,
                record=record,
                images=images,
                sheet=render_trial_sheet(record, images),
                verdict=trial.verdict,
            )
        reasons = ", ".join(f"{k} ×{v}" for k, v in failed.most_common())
        raise StudioError(
            f"no valid {domain} trial (item {index}) after {MAX_ATTEMPTS} draws; failed checks: "
            f"{reasons}. Offer more objects or other domains."
        )


class _Run:
    """One run's drawing state: the renderers (the pictures' and the rivals'), the camera, the
    objects resolved so far and the :class:`PictureCache` shared by its trials. Trial i depends
    only on (seed, i): its generator is seeded from them and a kept picture is the one a new
    render would make, so any split of the indices over runs gives the same trials."""

    def __init__(
        self,
        generator: KivaGenerator,
        renderers: tuple[Renderer, Renderer],
        keep_pictures: bool = True,
    ) -> None:
        from studio.render3d.scene import Camera

        self.generator = generator
        self.renderers = renderers
        self.camera = generator.camera or Camera()
        self.objects: dict[str, Object3D] = {}
        self.pictures = PictureCache() if keep_pictures else None
        self._plans: dict[tuple[int, int], tuple[list[str], list[bool]]] = {}

    def trials(self, count: int, seed: int, indices: Sequence[int]) -> Iterator[StimulusItem]:
        """Trials ``indices`` of a set of ``count`` (the set's plan places them)."""
        gen = self.generator
        plan = self._plans.get((count, seed))
        if plan is None:
            plan = self._plans[(count, seed)] = gen.plan(count, seed)
        schedule, no_change = plan
        for i in indices:
            rng = np.random.default_rng(np.random.SeedSequence([seed, i]))
            yield gen._trial(
                i,
                seed,
                schedule[i],
                no_change[i],
                rng,
                self.renderers,
                self.camera,
                self.objects,
                self.pictures,
            )


#: Trials from which :meth:`KivaGenerator.items` draws over a process pool by default: below,
#: starting the workers (Python, pyrender and an OpenGL context each, a second or two) costs
#: more than it saves.
POOL_MIN_TRIALS = 24
#: Trials per task sent to a worker.
POOL_CHUNK = 4


def default_workers(count: int, workers: int | None = None) -> int:
    """Processes that draw ``count`` trials: ``workers`` when given; None or 0 means every core
    this process may use, and 1 below :data:`POOL_MIN_TRIALS` trials or inside a daemonic
    process (which may not start its own); never more than there are chunks of
    :data:`POOL_CHUNK` trials. The bytes do not depend on the number."""
    return pool_workers(count, workers, min_items=POOL_MIN_TRIALS, chunk=POOL_CHUNK)


#: A pool worker's generator and its run (made on its first task, closed when it exits).
_WORKER: dict[str, Any] = {}


def _init_worker(generator: KivaGenerator, keep_pictures: bool) -> None:
    _WORKER["generator"] = generator
    _WORKER["keep_pictures"] = keep_pictures


def _worker_run() -> _Run:
    run = _WORKER.get("run")
    if run is None:
        from multiprocessing.util import Finalize

        from studio.render3d.scene import Renderer

        gen: KivaGenerator = _WORKER["generator"]
        renderer = Renderer(gen.size)
        compare = Renderer(COMPARE_SIZE) if gen.size > COMPARE_SIZE else renderer
        run = _WORKER["run"] = _Run(gen, (renderer, compare), _WORKER["keep_pictures"])
        # pool workers leave through os._exit, which skips atexit: multiprocessing's
        # finalisers still run
        Finalize(None, _close_worker, exitpriority=10)
    return run


def _close_worker() -> None:
    run = _WORKER.pop("run", None)
    if run is not None:
        renderer, compare = run.renderers
        if compare is not renderer:
            compare.close()
        renderer.close()


def _worker_trials(
    count: int, seed: int, indices: range
) -> list[tuple[StimulusItem, Counter[str]]]:
    """Draw these trials in a pool worker: each with the draws it refused, by check."""
    run = _worker_run()
    out = []
    for i in indices:
        run.generator.rejections = Counter()
        item = next(run.trials(count, seed, [i]))
        out.append((item, run.generator.rejections))
    return out


@dataclass(frozen=True)
class _NamedOnly:
    """An object known by name only (symbolic records: :meth:`KivaGenerator.records`)."""

    name: str

    @property
    def source(self) -> str:
        return "library"


@dataclass
class _Drawn:
    """A rendered, vetted trial; the options in unshuffled order: key, sibling, no change."""

    states: dict[str, StimulusState]
    pictures: dict[str, Image.Image]  # train-before, train-after, test-before
    option_images: list[Image.Image]
    fits: dict[str, float]
    verdict: Verdict

    def images(self, order: Sequence[int]) -> dict[str, Image.Image]:
        """The separate images, "option-k" being unshuffled option ``order[k]``."""
        out = dict(self.pictures)
        for k, j in enumerate(order):
            out[f"option-{k}"] = self.option_images[j]
        return out


#: Checks of the test object's change that only warn: the rule is read from the training pair,
#: so a key that looks like another rule's result on the test input is still the one answer.
TEST_WARNINGS = frozenset({"unique-transform"})


def _prefixed(
    verdict: Verdict, prefix: str, warnings: frozenset[str] = frozenset()
) -> tuple[Finding, ...]:
    return tuple(
        dataclasses.replace(
            c,
            check=f"{prefix}{c.check}",
            severity="warning" if c.check in warnings else c.severity,
        )
        for c in verdict.findings
    )


def _draw_trial(
    mode: str,
    spec: TransformSpec,
    choice: Choice,
    sibling: TransformSpec,
    no_change: bool,
    train_obj: Object3D,
    test_obj: Object3D,
    renderers: tuple[Renderer | None, Renderer | None],
    camera: Camera,
    size: int,
    candidates: Sequence[TransformSpec],
    pictures: PictureCache | None = None,
) -> _Drawn:
    """Render a trial's pictures and vet them (the same checks at generation and re-vetting).
    ``renderers``: the pictures' and the rival comparisons' (None: this thread's shared ones);
    ``pictures``: 3D pictures kept across trials (a run's; the same bytes as new renders)."""
    renderer, compare = renderers
    small = min(size, COMPARE_SIZE)
    train_before, test_before = choice.train, choice.test
    train_draw = StateRenderer(train_obj, renderer, camera, size, shared=pictures)
    test_draw = StateRenderer(test_obj, renderer, camera, size, shared=pictures)
    train_small = (
        StateRenderer(train_obj, compare, camera, small, shared=pictures)
        if small < size
        else train_draw
    )
    test_small = (
        StateRenderer(test_obj, compare, camera, small, shared=pictures)
        if small < size
        else test_draw
    )
    layout = _trial_layout(spec, choice, sibling, no_change, train_draw, test_draw)
    train_fit, test_fit = layout.fits["train"], layout.fits["test"]
    checks: list[Finding] = []
    # the shown change must read one way on both objects (in a no-change trial: the change
    # that would have been shown, whose after-picture is a distractor)
    checks += _prefixed(
        vet_transform(
            train_obj,
            spec,
            train_before,
            candidates=candidates,
            fit=train_fit,
            drawer=train_draw,
            compare=train_small,
        ),
        "train-",
    )
    checks += _prefixed(
        vet_transform(
            test_obj,
            spec,
            test_before,
            candidates=candidates,
            fit=test_fit,
            drawer=test_draw,
            compare=test_small,
        ),
        "test-",
        TEST_WARNINGS,
    )
    option_images = layout.option_images(test_draw)
    key_at = 2 if no_change else 0
    distractors = [img for j, img in enumerate(option_images) if j != key_at]
    checks += vet_options(option_images[key_at], distractors).findings
    same, diff, iou = confusable(distractors[0], distractors[1])
    checks.append(
        Finding(
            "distinct-distractors",
            not same,
            diff,
            f"the two distractors differ in {diff:.1%} of the drawn pixels (IoU {iou:.3f})",
        )
    )
    return _Drawn(
        states=layout.states,
        pictures=layout.pictures(train_draw, test_draw),
        option_images=option_images,
        fits=layout.fits,
        verdict=Verdict(tuple(checks)),
    )


@dataclass(frozen=True)
class _Layout:
    """What a trial's pictures show and at which fit: the states of the training pair and the
    test input, the options unshuffled (key, sibling, no change) and one fit per object. The
    one place generation and :func:`render_trial_record` both take them from."""

    states: dict[str, StimulusState]
    unshuffled: tuple[StimulusState, ...]
    fits: dict[str, float]

    def pictures(self, train: StateRenderer, test: StateRenderer) -> dict[str, Image.Image]:
        """train-before, train-after and test-before."""
        return {
            "train-before": train.image(self.states["train_before"], self.fits["train"]),
            "train-after": train.image(self.states["train_after"], self.fits["train"]),
            "test-before": test.image(self.states["test_before"], self.fits["test"]),
        }

    def option_images(self, test: StateRenderer) -> list[Image.Image]:
        """The options' after-pictures, unshuffled."""
        return [test.image(s, self.fits["test"]) for s in self.unshuffled]


def _trial_layout(
    spec: TransformSpec,
    choice: Choice,
    sibling: TransformSpec,
    no_change: bool,
    train_draw: StateRenderer,
    test_draw: StateRenderer,
) -> _Layout:
    """The trial's states and fits (one per object, over the pictures shown together), from
    its symbolic choice: generation and :func:`render_trial_record` draw at the same fits."""
    train_before, test_before = choice.train, choice.test
    train_after = train_before if no_change else apply(spec, train_before)
    unshuffled = (apply(spec, test_before), apply(sibling, test_before), test_before)
    return _Layout(
        states={
            "train_before": train_before,
            "train_after": train_after,
            "test_before": test_before,
        },
        unshuffled=unshuffled,
        fits={
            "train": train_draw.fit([train_before, apply(spec, train_before)]),
            "test": test_draw.fit([test_before, *unshuffled]),
        },
    )


def _shuffled(
    rng: np.random.Generator, ids: Sequence[str], labels: Sequence[str], key: str
) -> dict[str, Any]:
    order = [int(i) for i in rng.permutation(len(ids))]
    shown_ids = [ids[i] for i in order] + [DOESNT_APPLY]
    shown_labels = [labels[i] for i in order] + [DOESNT_APPLY_LABEL]
    return {"option_ids": shown_ids, "options": shown_labels, "key": shown_ids.index(key)}


def _record(
    mode: str,
    domain: str,
    spec: TransformSpec,
    choice: Choice,
    sibling: TransformSpec,
    no_change: bool,
    train_name: str,
    test_name: str,
    objects: Mapping[str, Object3D],
    trial: _Drawn,
    camera: Camera,
    size: int,
    rng: np.random.Generator,
) -> tuple[dict[str, Any], list[int]]:
    """The trial's symbolic record, with the option orders drawn from ``rng``; and the order of
    the extrapolation options (shown option k is unshuffled option ``order[k]``)."""
    # 1. what changed: the domain, two other domains, no change
    others = [d for d in DOMAINS if d != domain]
    two = [others[int(i)] for i in rng.choice(len(others), size=2, replace=False)]
    what_ids = [domain, *two, NO_CHANGE]
    what = _shuffled(
        rng,
        what_ids,
        [DOMAIN_LABELS[d] for d in what_ids[:3]] + [NO_CHANGE_LABEL],
        NO_CHANGE if no_change else domain,
    )
    # 2. how: the value and two others of the domain (the mode's first; KiVA has only two
    # reflections and two sizes, so the third comes from the adults' values)
    pool = [v for v in MODES[mode][domain] if v != spec.value]
    extra = [v for v in VALUES[domain] if v != spec.value and v not in pool]
    picked = [pool[int(i)] for i in rng.permutation(len(pool))][:2]
    if len(picked) < 2:
        picked += [extra[int(i)] for i in rng.permutation(len(extra))][: 2 - len(picked)]
    how_specs = [spec, *(TransformSpec(domain, v) for v in picked)]
    how = _shuffled(
        rng,
        [s.id for s in how_specs],
        [s.label for s in how_specs],
        DOESNT_APPLY if no_change else spec.id,
    )
    # 3. extrapolation: key, sibling, no change
    order = [int(i) for i in rng.permutation(3)]
    unshuffled_ids = [spec.id, sibling.id, NO_CHANGE]
    unshuffled_states = [apply(spec, choice.test), apply(sibling, choice.test), choice.test]
    key_j = 2 if no_change else 0
    extrapolate = {
        "option_ids": [unshuffled_ids[j] for j in order] + [DOESNT_APPLY],
        "options": [f"({OPTION_LETTERS[k]})" for k in range(3)] + [f"(D) {DOESNT_APPLY_LABEL}"],
        "option_labels": [
            NO_CHANGE_LABEL
            if unshuffled_ids[j] == NO_CHANGE
            else TransformSpec.parse(unshuffled_ids[j]).label
            for j in order
        ]
        + [DOESNT_APPLY_LABEL],
        "option_states": [unshuffled_states[j].to_json() for j in order],
        "images": [f"option-{k}" for k in range(3)],
        "key": order.index(key_j),
    }
    questions = [
        {"id": "what", "prompt": PROMPTS["what"], **what},
        {"id": "how", "prompt": PROMPTS["how"], **how},
        {"id": "extrapolate", "prompt": PROMPTS["extrapolate"], **extrapolate},
    ]
    if no_change:
        questions[1]["note"] = "no change: there is nothing to specify"
    record = {
        "mode": mode,
        "domain": domain,
        "spec": spec.id,
        "spec_label": spec.label,
        "sibling": sibling.id,
        "no_change": no_change,
        "objects": {
            role: {"name": name, "source": objects[name].source}
            for role, name in (("train", train_name), ("test", test_name))
        },
        "states": {k: s.to_json() for k, s in trial.states.items()}
        | {"test_key": unshuffled_states[key_j].to_json()},
        "fits": {k: round(v, 9) for k, v in trial.fits.items()},
        "questions": questions,
        "camera": _camera_json(camera) if camera is not None else None,
        "size": size,
        "measures": {
            c.check: None if c.measure is None else round(float(c.measure), 6)
            for c in trial.verdict.findings
        },
    }
    return record, order


# ---------------------------------------------------------------------------------- re-vetting


def vet_trial_record(record: Mapping[str, Any], renderer: Renderer | None = None) -> Verdict:
    """Check a trial from its record alone: the questions (four shuffled options and
    "doesn't apply" last, keys pointing at the right answers, the options each once), the states
    (the after-pictures are the recorded transformations of the inputs; kiva's test input equals
    the training input, kiva-adults' differs), then the pictures re-rendered and vetted as at
    generation (with ``renderer`` or this thread's of the record's size)."""
    return vet_and_draw_trial_record(record, renderer)[0]


def vet_and_draw_trial_record(
    record: Mapping[str, Any], renderer: Renderer | None = None
) -> tuple[Verdict, dict[str, Image.Image], Image.Image]:
    """The family's ``vet_render_record``: :func:`vet_trial_record`'s verdict and the
    pictures and sheet its rendering drew — those generation drew and
    :func:`render_trial_record` draws again — so an export renders each trial once, not once
    to vet and once to write."""
    checks: list[Finding] = []
    mode, domain = str(record["mode"]), str(record["domain"])
    spec, sibling = TransformSpec.parse(record["spec"]), TransformSpec.parse(record["sibling"])
    no_change = bool(record["no_change"])
    states = {k: StimulusState.from_json(v) for k, v in record["states"].items()}
    q = {x["id"]: x for x in record["questions"]}
    problems: list[str] = []
    what, how, ext = q.get("what"), q.get("how"), q.get("extrapolate")
    if what is None or how is None or ext is None:
        problems.append("the three questions are not all there")
    else:
        for name, question, n in (("what", what, 5), ("how", how, 4), ("extrapolate", ext, 4)):
            ids = list(question["option_ids"])
            if len(ids) != n or len(set(ids)) != n or ids[-1] != DOESNT_APPLY:
                problems.append(f"{name}: options {ids}")
        expected = {
            "what": NO_CHANGE if no_change else domain,
            "how": DOESNT_APPLY if no_change else spec.id,
            "extrapolate": NO_CHANGE if no_change else spec.id,
        }
        for name, question in (("what", what), ("how", how), ("extrapolate", ext)):
            key = int(question["key"])
            if question["option_ids"][key] != expected[name]:
                problems.append(f"{name}: key {key} is {question['option_ids'][key]!r}")
        if domain not in what["option_ids"] or NO_CHANGE not in what["option_ids"]:
            problems.append("what: the domain or 'no change' is missing")
        if sorted(ext["option_ids"][:3]) != sorted([spec.id, sibling.id, NO_CHANGE]):
            problems.append("extrapolate: the options are not key, sibling and no change")
    checks.append(
        Finding("questions", not problems, float(len(problems)), "; ".join(problems) or "ok")
    )
    problems = []
    train_after = states["train_before"] if no_change else apply(spec, states["train_before"])
    if states["train_after"] != train_after:
        problems.append("the training after-picture is not the recorded change")
    key_state = states["test_before"] if no_change else apply(spec, states["test_before"])
    if states["test_key"] != key_state:
        problems.append("the key is not the recorded change of the test input")
    if (states["test_before"] == states["train_before"]) != (mode == "kiva"):
        problems.append("kiva's test input must equal the training input, kiva-adults' must differ")
    checks.append(
        Finding("states", not problems, float(len(problems)), "; ".join(problems) or "ok")
    )

    size = int(record["size"])
    camera = _camera_from(record.get("camera"))
    objs = _record_objects(record)
    choice = Choice(spec, states["train_before"], states["test_before"], (sibling,))
    drawn = _draw_trial(
        mode,
        spec,
        choice,
        sibling,
        no_change,
        objs["train"],
        objs["test"],
        (renderer, None),
        camera,
        size,
        specs(mode),
    )
    ext = next((x for x in record["questions"] if x["id"] == "extrapolate"), None)
    unshuffled_ids = [spec.id, sibling.id, NO_CHANGE]
    shown = list(ext["option_ids"][: len(unshuffled_ids)]) if ext is not None else []
    if sorted(shown) != sorted(unshuffled_ids):  # the questions check failed: stored order
        shown = unshuffled_ids
    images = drawn.images([unshuffled_ids.index(i) for i in shown])
    verdict = Verdict(tuple(checks) + drawn.verdict.findings)
    return verdict, images, render_trial_sheet(record, images)


def _record_objects(record: Mapping[str, Any]) -> dict[str, Object3D]:
    """The record's objects by role (train, test): library objects by name, others from
    their mesh file."""
    return {
        role: _resolve_object(o["name"] if o.get("source") == "library" else o["source"])
        for role, o in record["objects"].items()
    }


def render_trial_record(
    record: Mapping[str, Any], renderer: Renderer | None = None
) -> tuple[dict[str, Image.Image], Image.Image]:
    """The family's ``render_record``: a trial's pictures (train-before, train-after,
    test-before, option-0 … in the record's shuffled order) and its sheet, re-drawn from a
    stored record (an ``items.jsonl`` line or the bare record) with generation's states, fits
    (:func:`_trial_layout`) and layout (:func:`render_trial_sheet`), without the vetting's
    rival renders; with ``renderer`` or this thread's of the record's size."""
    spec, sibling = TransformSpec.parse(record["spec"]), TransformSpec.parse(record["sibling"])
    no_change = bool(record["no_change"])
    states = {k: StimulusState.from_json(v) for k, v in record["states"].items()}
    size = int(record["size"])
    camera = _camera_from(record.get("camera"))
    objs = _record_objects(record)
    choice = Choice(spec, states["train_before"], states["test_before"], (sibling,))
    train_draw = StateRenderer(objs["train"], renderer, camera, size)
    test_draw = StateRenderer(objs["test"], renderer, camera, size)
    layout = _trial_layout(spec, choice, sibling, no_change, train_draw, test_draw)
    # shown option k is unshuffled option order[k], as _record shuffled them
    ext = next(q for q in record["questions"] if q["id"] == "extrapolate")
    unshuffled_ids = [spec.id, sibling.id, NO_CHANGE]
    order = [unshuffled_ids.index(i) for i in ext["option_ids"][: len(unshuffled_ids)]]
    drawn = _Drawn(
        layout.states,
        layout.pictures(train_draw, test_draw),
        layout.option_images(test_draw),
        layout.fits,
        Verdict(),
    )
    images = drawn.images(order)
    return images, render_trial_sheet(record, images)


# ---------------------------------------------------------------------------------- the sheet


def _arrow(draw: ImageDraw.ImageDraw, x0: float, x1: float, y: float, width: int) -> None:
    head = max(4.0, (x1 - x0) * 0.35)
    draw.line([(x0, y), (x1 - head * 0.6, y)], fill=(60, 60, 60), width=width)
    draw.polygon(
        [(x1, y), (x1 - head, y - head * 0.55), (x1 - head, y + head * 0.55)], fill=(60, 60, 60)
    )


def render_trial_sheet(record: Mapping[str, Any], images: Mapping[str, Image.Image]) -> Image.Image:
    """The trial as one picture, laid out like KiVA's figures: the training pair with an arrow
    on top; below, the three extrapolation options, each the test input, an arrow and the
    option's after-picture, labelled (A), (B), (C)."""
    tile = images["train-before"].width
    pad = max(4, tile // 10)
    arrow_w = max(12, tile // 3)
    gap = max(8, tile // 4)
    label_h = max(12, tile // 6)
    pair_w = 2 * tile + arrow_w
    n_opts = sum(1 for k in images if k.startswith("option-"))
    width = 2 * pad + n_opts * pair_w + (n_opts - 1) * gap
    rule_y = pad + tile + pad
    top2 = rule_y + pad
    height = top2 + tile + label_h + pad
    sheet = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(sheet)
    line_w = max(1, tile // 60)
    font = label_font(max(10, int(label_h * 0.8)))

    def pair(x: int, y: int, before: Image.Image, after: Image.Image) -> None:
        for img, xx in ((before, x), (after, x + tile + arrow_w)):
            sheet.paste(img.convert("RGB"), (xx, y))
            draw.rectangle([xx, y, xx + tile - 1, y + tile - 1], outline=(190, 190, 190))
        _arrow(draw, x + tile + arrow_w * 0.15, x + tile + arrow_w * 0.85, y + tile / 2, line_w)

    pair((width - pair_w) // 2, pad, images["train-before"], images["train-after"])
    draw.line([(pad, rule_y), (width - pad, rule_y)], fill=(120, 120, 120), width=line_w)
    for k in range(n_opts):
        x = pad + k * (pair_w + gap)
        pair(x, top2, images["test-before"], images[f"option-{k}"])
        draw.text(
            (x + pair_w / 2, top2 + tile + label_h * 0.1),
            f"({OPTION_LETTERS[k]})",
            fill=(20, 20, 20),
            font=font,
            anchor="mt",
        )
    return sheet
