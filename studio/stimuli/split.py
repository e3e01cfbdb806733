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
the same command re-creates the same bytes.
"""

from __future__ import annotations

import io
import json
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from studio import __version__
from studio.core.errors import StudioError
from studio.core.fileio import atomic_write_bytes, atomic_write_text
from studio.plugins import families, family
from studio.stimuli.items import ItemVerdict, StimulusItem

FORMAT = "analogy-studio.stimulus-split"
FORMAT_VERSION = 1
ITEMS = "items.jsonl"
SPLIT_JSON = "split.json"
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


def check_target(out: Path) -> None:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise StudioError("exists and is not an empty folder; choose a new one", out)


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
    check_target(out)
    generator = make_generator(family, options or {})
    options = {k: v for k, v in (options or {}).items() if v is not None}
    parts = assign_parts(n, ratios, seed)
    out.mkdir(parents=True, exist_ok=True)
    lines: list[str] = []
    records: list[dict[str, Any]] = []
    failed: Counter[str] = Counter()
    valid = 0
    for i, item in enumerate(generator.items(n, seed, progress)):
        if should_stop is not None and should_stop():
            raise StudioError("generation was cancelled; the split folder is unfinished", out)
        record = {**item.to_json(), "part": parts[i]}
        lines.append(json.dumps(record, sort_keys=True, ensure_ascii=False))
        records.append(record)
        valid += item.verdict.valid
        failed.update(c.check for c in item.verdict.errors)
        _write_item(out, item)
    if len(lines) != n:
        raise StudioError(f"the {family} generator made {len(lines)} of {n} items", out)
    atomic_write_text(out / ITEMS, "\n".join(lines) + "\n")
    summary = {
        "family": family,
        "items": n,
        "valid": valid,
        "invalid": n - valid,
        "parts": dict(sorted(Counter(parts).items())),
        "rejections": dict(sorted(getattr(generator, "rejections", {}).items())),
        "failed_checks": dict(sorted(failed.items())),
    }
    report = dict(summary)
    # the answer-set audit (can the key be found from the answers alone?), where the family's
    # records have symbolic answer attributes (studio.stimuli.symbolic)
    from studio.vet.audit import audit_stimulus_records

    audit = audit_stimulus_records(family, records)
    if audit is not None:
        report["audit"] = audit
    atomic_write_text(out / REPORT_JSON, json.dumps(report, indent=1, sort_keys=True) + "\n")
    meta = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "family": family,
        "options": options,
        "n": n,
        "seed": seed,
        "ratios": list(ratios),
        "studio_version": __version__,
        "summary": summary,
    }
    atomic_write_text(out / SPLIT_JSON, json.dumps(meta, indent=1, sort_keys=True) + "\n")
    return {"out_dir": str(out), **summary}


def _write_item(out: Path, item: StimulusItem) -> None:
    atomic_write_bytes(out / "sheets" / f"{item.id}.png", png_bytes(item.sheet))
    for name, image in sorted(item.images.items()):
        atomic_write_bytes(out / "images" / item.id / f"{name}.png", png_bytes(image))


def is_stimulus_split(folder: str | Path) -> bool:
    path = Path(folder) / SPLIT_JSON
    if not path.is_file():
        return False
    try:
        meta = json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    return isinstance(meta, dict) and meta.get("format") == FORMAT


def read_stimulus_split(folder: str | Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """split.json and the item records; errors name the file and line."""
    folder = Path(folder)
    meta_path = folder / SPLIT_JSON
    if not meta_path.is_file():
        raise StudioError("has no split.json: it is not a split, or an unfinished one", folder)
    try:
        meta = json.loads(meta_path.read_text())
    except ValueError as e:
        raise StudioError(f"is not valid JSON: {e}", meta_path) from e
    if meta.get("format") != FORMAT:
        raise StudioError(f"is not a {FORMAT} file", meta_path)
    if int(meta.get("format_version", 0)) > FORMAT_VERSION:
        raise StudioError(
            f"was written by a newer studio (format {meta['format_version']})", meta_path
        )
    records = []
    items_path = folder / ITEMS
    try:
        text = items_path.read_text()
    except OSError as e:
        raise StudioError(f"cannot be read: {e}", items_path) from e
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except ValueError as e:
            raise StudioError(f"line {n} is not valid JSON: {e}", items_path) from e
    return meta, records


def vet_stimulus_split(folder: str | Path) -> list[tuple[str, ItemVerdict]]:
    """Re-run the family's checks on every record, from the records alone."""
    meta, records = read_stimulus_split(folder)
    family_id = meta.get("family", "")
    if family_id not in stimulus_families():
        raise StudioError(
            f"family {family_id!r} is unknown to this studio", Path(folder) / SPLIT_JSON
        )
    vet = family(family_id).load("vet_record")
    return [(r["id"], vet(r)) for r in records]
