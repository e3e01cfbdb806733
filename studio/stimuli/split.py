"""Generate a non-glyph family (KiVA, polycube rotation, shape composition, cube nets) into a
split folder, and re-vet one from its records.

A stimulus split folder holds::

    items.jsonl            one record per item (StimulusItem.to_json, sorted keys): the symbolic
                           description, the part (train/val/test), the vet verdict with measures
    sheets/<id>.png        the single stitched image of the item (what a person sees)
    images/<id>/<name>.png the separate images (question, candidates, before/after …)
    report.json            counts: valid, rejected candidates by reason, failed checks by name
    split.json             format, family, options, seed, ratios, counts, studio version —
                           written last: a folder without it is unfinished

Nothing depends on the time or the machine: JSON has sorted keys, PNGs carry no time chunk, so
the same command re-creates the same bytes. The folder must be new or empty; files are written
plainly and made durable with one sync of the folder (:func:`studio.core.fileio.sync_tree`, not
an fsync per file) before ``split.json``, so a kill leaves a folder without it, which is refused.
"""

from __future__ import annotations

import io
import json
import zlib
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from studio import __version__
from studio.core.errors import StudioError
from studio.core.fileio import sync_tree, write_file
from studio.core.splitdir import SPLIT_JSON, SplitFormat, check_target, json_object, read_records
from studio.core.verdict import Verdict
from studio.plugins import families, family
from studio.stimuli.items import RECORD_ERRORS, StimulusItem, plain_name

FORMAT = "analogy-studio.stimulus-split"
FORMAT_VERSION = 1
#: the stimulus split's format (its JSON has always been ASCII-escaped)
STIMULUS_SPLIT = SplitFormat(FORMAT, FORMAT_VERSION, ascii_json=True)
ITEMS = "items.jsonl"
REPORT_JSON = "report.json"
PARTS = ("train", "val", "test")

Progress = Callable[[int, int], None]


def stimulus_families() -> list[str]:
    """The registered families this module writes (``kind="stimulus"``; plugins may add)."""
    return [f.id for f in families("stimulus")]


def make_generator(family_id: str, options: Mapping[str, Any]) -> Any:
    """The family's generator with the options it accepts, checked against its options schema
    (an unknown option is refused by name, so a typo is not silently ignored)."""
    known = stimulus_families()
    if family_id not in known:
        raise StudioError(f"no stimulus family {family_id!r} (known: {', '.join(known)})")
    fam = family(family_id)
    checked = fam.resolve_options(options)
    try:
        return fam.load("generator")(**checked)
    except (TypeError, ValueError) as e:
        raise StudioError(f"family {family_id}: {e}") from e


def png_bytes(image: Image.Image) -> bytes:
    buf = io.BytesIO()
    image.save(buf, format="PNG", optimize=False)
    return buf.getvalue()


def assign_parts(count: int, ratios: tuple[float, float, float], seed: int) -> list[str]:
    """train/val/test per item index: exact counts from the ratios, positions seeded."""
    if len(ratios) != 3 or min(ratios) < 0 or sum(ratios) <= 0:
        raise StudioError(f"ratios must be three shares like 0.7,0.1,0.2 (got {ratios})")
    total = sum(ratios)
    n_train = round(count * ratios[0] / total)
    n_val = round(count * ratios[1] / total)
    labels = ["train"] * n_train + ["val"] * n_val
    labels += ["test"] * (count - len(labels))
    order = np.random.default_rng([seed, 7]).permutation(count)
    return [labels[i] for i in order]


class ItemDraw:
    """``n`` items of a family from its options, each record with its part: what ``generate``
    writes to a split folder and what the board keeps in a project (one loop for both).
    Iterate for ``(record, item)``; :meth:`summary` afterwards."""

    def __init__(
        self,
        family: str,
        n: int,
        seed: int,
        options: Mapping[str, Any] | None = None,
        ratios: tuple[float, float, float] = (0.7, 0.1, 0.2),
        progress: Progress | None = None,
    ) -> None:
        self.family, self.n, self.seed, self.progress = family, n, seed, progress
        self.generator = make_generator(family, options or {})
        self.options = {k: v for k, v in (options or {}).items() if v is not None}
        self.parts = assign_parts(n, ratios, seed)
        self.valid = 0
        self.failed: Counter[str] = Counter()

    def __iter__(self) -> Iterator[tuple[dict[str, Any], StimulusItem]]:
        for i, item in enumerate(self.generator.items(self.n, self.seed, self.progress)):
            self.valid += item.verdict.valid
            self.failed.update(f.check for f in item.verdict.errors)
            yield {**item.to_json(), "part": self.parts[i]}, item

    def summary(self) -> dict[str, Any]:
        return {
            "family": self.family,
            "items": self.n,
            "valid": self.valid,
            "invalid": self.n - self.valid,
            "parts": dict(sorted(Counter(self.parts).items())),
            "rejections": dict(sorted(getattr(self.generator, "rejections", {}).items())),
            "failed_checks": dict(sorted(self.failed.items())),
        }


def generate_stimulus_split(
    family: str,
    out_dir: str | Path,
    n: int,
    seed: int = 1,
    options: Mapping[str, Any] | None = None,
    ratios: tuple[float, float, float] = (0.7, 0.1, 0.2),
    progress: Progress | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> dict[str, Any]:
    """Generate ``n`` vetted items of a family and write the split folder. Returns the
    summary that also goes into split.json (less the format fields)."""
    if n < 1:
        raise StudioError(f"--n must be at least 1 (got {n})")
    out = Path(out_dir)
    check_target(out)  # new or empty only: nothing here removes an earlier split's files
    draw = ItemDraw(family, n, seed, options, ratios, progress)
    options = draw.options
    out.mkdir(parents=True, exist_ok=True)
    lines: list[str] = []
    records: list[dict[str, Any]] = []
    for record, item in draw:
        if should_stop is not None and should_stop():
            raise StudioError("generation was cancelled; the split folder is unfinished", out)
        lines.append(json.dumps(record, sort_keys=True, ensure_ascii=False))
        records.append(record)
        _write_item(out, item)
    if len(lines) != n:
        raise StudioError(f"the {family} generator made {len(lines)} of {n} items", out)
    write_file(out / ITEMS, ("\n".join(lines) + "\n").encode("utf-8"))
    summary = draw.summary()
    report = dict(summary)
    # the answer-set audit (can the key be found from the answers alone?), where the family's
    # records have symbolic answer attributes (studio.stimuli.symbolic)
    from studio.stimuli.symbolic import audit_stimulus_records

    audit = audit_stimulus_records(family, records)
    if audit is not None:
        report["audit"] = audit
    views = (audit or {}).get("partial_views")
    write_file(out / REPORT_JSON, STIMULUS_SPLIT.json_bytes(report))
    # every file so far was written plainly: one sync makes them all durable before
    # split.json (written last, atomically) says the split is whole
    sync_tree(out)
    meta = {
        "family": family,
        "options": options,
        "n": n,
        "seed": seed,
        "ratios": list(ratios),
        "studio_version": __version__,
        "summary": summary,
    }
    STIMULUS_SPLIT.finish(out, meta)
    return {"out_dir": str(out), **summary, **({"partial_views": views} if views else {})}


def _write_item(out: Path, item: StimulusItem) -> None:
    """An item's pictures, plainly: the folder is synced once before ``split.json``."""
    files = [(out / "sheets" / f"{item.id}.png", item.sheet)]
    files += [(out / "images" / item.id / f"{n}.png", im) for n, im in sorted(item.images.items())]
    for path, image in files:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_file(path, png_bytes(image))


def render_record(record: Mapping[str, Any]) -> tuple[dict[str, Image.Image], Image.Image]:
    """An item's pictures by name (as :attr:`StimulusItem.images`) and its sheet, re-drawn
    from its record alone by its family's ``render_record``: the curator's board and
    ``export-set`` store records, not pictures, and draw them again to show or write them.
    ``record`` is an ``items.jsonl`` line (:meth:`StimulusItem.to_json`: its ``family`` names
    the family). StudioError names the family when it is unknown or cannot re-draw items."""
    family_id = record.get("family")
    if not isinstance(family_id, str) or family_id not in stimulus_families():
        known = ", ".join(stimulus_families())
        raise StudioError(
            f"item {record.get('id', '?')}: no stimulus family {family_id!r} to re-draw it "
            f"(known: {known})"
        )
    fam = family(family_id)
    if fam.render_record is None:
        raise StudioError(
            f"item {record.get('id', '?')}: family {family_id} cannot re-draw an item from its "
            "record (its definition has no render_record)"
        )
    images, sheet = fam.load("render_record")(record)
    return dict(images), sheet


def write_drawn_split(
    folder: str | Path,
    family_id: str,
    records: Sequence[Mapping[str, Any]],
    progress: Progress | None = None,
) -> None:
    """Stored item records (a project's stimulus set) as a split folder with their pictures
    drawn again from the records: what a baseline job over a project's set reads, as it reads
    a split ``generate`` wrote. ``folder`` must be new or empty."""
    out = Path(folder)
    check_target(out)
    out.mkdir(parents=True, exist_ok=True)
    lines = []
    for i, record in enumerate(records):
        try:
            images, sheet = render_record(record)
        except RECORD_ERRORS as e:  # a record damaged in the store: named, not a crash
            raise StudioError(
                f"item {record.get('id', '?')}: its {family_id} record cannot be drawn "
                f"({type(e).__name__}: {e})"
            ) from None
        item = StimulusItem(str(record["id"]), family_id, dict(record), images, sheet)
        _write_item(out, item)
        lines.append(json.dumps(dict(record), sort_keys=True, ensure_ascii=False))
        if progress is not None:
            progress(i + 1, len(records))
    write_file(out / ITEMS, ("\n".join(lines) + "\n").encode("utf-8"))
    sync_tree(out)
    STIMULUS_SPLIT.finish(out, {"family": family_id, "n": len(records), "drawn_from": "records"})


def is_stimulus_split(folder: str | Path) -> bool:
    """Does ``folder`` hold a finished stimulus split? Never raises."""
    return STIMULUS_SPLIT.is_split(folder)


PARTS = ("train", "val", "test")


def read_stimulus_split(folder: str | Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """split.json and the item records, checked for what every reader relies on (the one
    definition ``vet`` and ``baseline`` share): ids that are unique strings, a part of train,
    val or test, and keys that are whole numbers (not 1.5, not ``true``). Errors name the
    file and the item."""
    folder = Path(folder)
    meta = STIMULUS_SPLIT.read_split_json(folder)
    records = read_records(folder / ITEMS, json_object)
    path = folder / ITEMS
    seen: set[str] = set()
    for n, r in enumerate(records, 1):
        rid = r.get("id")
        where = f"item {n}" if not isinstance(rid, str) else f"item {rid}"
        if not isinstance(rid, str) or not rid:
            raise StudioError(f"{where}: its id {rid!r} is not a name", path)
        if rid in seen:
            raise StudioError(f"{where}: the id is used twice", path)
        seen.add(rid)
        names = r.get("images", [])
        if not (isinstance(names, list) and all(map(plain_name, names)) and plain_name(rid)):
            raise StudioError(f"{where}: its id and images must be plain names", path)
        if r.get("part") not in PARTS:
            raise StudioError(f"{where}: part {r.get('part')!r} is not train, val or test", path)
        keys = [r["key"]] if "key" in r else []
        questions = r.get("questions", [])
        if isinstance(questions, list):
            keys += [q["key"] for q in questions if isinstance(q, dict) and "key" in q]
        for key in keys:
            if not isinstance(key, int) or isinstance(key, bool):
                raise StudioError(f"{where}: key {key!r} is not a whole number", path)
    return meta, records


def vet_stimulus_split(folder: str | Path) -> list[Verdict]:
    """Re-run the family's checks on every record, from the records alone: one verdict per
    item, in file order, its ``subject_id`` the item's id."""
    meta, records = read_stimulus_split(folder)
    family_id = meta.get("family", "")
    if family_id not in stimulus_families():
        raise StudioError(
            f"family {family_id!r} is unknown to this studio", Path(folder) / SPLIT_JSON
        )
    vet = family(family_id).load("vet_record")
    out = []
    for r in records:
        try:
            verdict = vet(r)
        except RECORD_ERRORS as e:
            raise StudioError(
                f"item {r['id']}: a damaged {family_id} record ({type(e).__name__}: {e})",
                Path(folder) / ITEMS,
            ) from None
        check_pictures(Path(folder), r)
        out.append(replace(verdict, subject_id=str(r["id"])))
    return out


#: Largest picture of an item a split may hold (pixels), for ``vet`` and ``baseline`` alike:
#: the studio draws them at a few hundred pixels a side; a 30000 × 30000 PNG is damage.
MAX_PICTURE_PIXELS = 4096 * 4096
#: What Pillow raises on a damaged PNG: OSError mostly, SyntaxError for a broken chunk
#: ("broken PNG file"), zlib's error, ValueError and EOFError for truncations (the fuzz bench
#: found each), DecompressionBombError for a huge one.
PICTURE_ERRORS: tuple[type[BaseException], ...] = (
    OSError,
    SyntaxError,
    ValueError,
    EOFError,
    zlib.error,
    Image.DecompressionBombError,
)


def open_picture(path: Path) -> Image.Image:
    """An item's picture, opened (its header read, nothing decoded yet) once it is known to
    be there, a regular file and at most :data:`MAX_PICTURE_PIXELS`: the one check ``vet``
    and ``baseline`` both make (issue 25). StudioError naming the file otherwise; decoding
    errors later are the caller's to catch (:data:`PICTURE_ERRORS`)."""
    from studio.core.splitdir import require_regular_file

    try:
        there = path.exists()  # raises for a name too long for the file system, say
    except OSError as e:
        raise StudioError(f"cannot be read: {e.strerror or e}", path) from None
    if not there:
        raise StudioError("missing: the item's picture is not there", path)
    require_regular_file(path)
    try:
        im = Image.open(path)
    except PICTURE_ERRORS as e:
        raise StudioError(f"cannot be read as a picture: {e}", path) from None
    if im.width * im.height > MAX_PICTURE_PIXELS:
        im.close()
        raise StudioError(
            f"is {im.width} × {im.height} pixels, too large to be an item's picture "
            f"(at most {MAX_PICTURE_PIXELS:,} pixels)",
            path,
        )
    return im


def check_pictures(folder: Path, record: Mapping[str, Any]) -> None:
    """Every picture the record names is there and sane (:func:`open_picture`): what
    ``baseline`` will read, ``vet`` has looked at."""
    for name in record.get("images", []):
        with open_picture(folder / "images" / str(record["id"]) / f"{name}.png"):
            pass
