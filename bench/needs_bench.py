"""Benchmark `needs`: does following the Needs column bring it down? (issue 24)

An annotator follows the annotation-needs report of the default split (``annotation_needs``
with ``SplitParams()``) on the shared UA annotations, one tag at a time: take the first dry
tuple of the held-out (eval) side that tagging can mend, the first value it asks for, and tag
one more glyph with it; then read the report again. ``--steps`` tags (default 30).

Two hold-outs, same run, same annotations, same choices:

- **permutation** (the reference: the hold-out before issue 24, ``holdout_version`` 1, which
  the studio keeps for the sets made with it): the glyphs are split by a permutation seeded
  with (seed, fold), so one more tagged glyph redraws every glyph's side; the annotator
  cannot know a glyph's side and tags any untagged glyph;
- **glyph-side** (the studio's): a glyph's side is its own (``split.glyph_side``), so the
  annotator tags a glyph that View ▸ Only held-out glyphs shows.

Reported per hold-out: how often the value asked for fell by one (``asked_fell``), how often
another value's count moved (``others_moved``, and by how much in all), the eval side's total
ask before and after, and the seconds per report.

The new glyphs are private-use code points of a font of the benchmark's own: to the hold-out
and the report they are what an untagged glyph of a project is. Prints one JSON object.
``python bench/run.py needs [--steps N]``.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import numpy as np
from common import ua_csv


def follow(kind: str, tags: list[Any], schema: Any, steps: int) -> dict[str, Any]:
    from studio.core.keys import GlyphKey
    from studio.core.tagindex import TagIndex
    from studio.families.glyph_pmp.needs import annotation_needs
    from studio.families.glyph_pmp.split import glyph_side
    from studio.generate.params import SplitParams

    # the reference: the hold-out of splits made before issue 24, which the studio keeps for
    # their sets (holdout_version 1: a permutation from the split's seeded generator)
    params = SplitParams(holdout_version=1 if kind == "permutation" else 2)
    fresh = (GlyphKey(cp, "needs-bench") for cp in range(0xF0000, 0xFFFFD))
    tags = list(tags)
    seconds: list[float] = []

    def report() -> Any:
        t0 = time.perf_counter()
        r = annotation_needs(params, TagIndex.from_tags(tags), schema)
        seconds.append(time.perf_counter() - t0)
        return r

    def eval_asks(r: Any) -> dict[tuple[str, str], int]:
        return {cv: s.get("eval", 0) for cv, s in r.per_value_side().items() if s.get("eval")}

    now = report()
    first_total = sum(eval_asks(now).values())
    fell = moved = moved_by = 0
    done = 0
    for _ in range(steps):
        asks = eval_asks(now)
        todo = [t for t in now.tuples if t.side == "eval" and t.mendable and t.values]
        if not todo:
            break
        v = todo[0].values[0]
        cv = (v.concept, v.value.split("+")[0])
        key = next(fresh)
        if kind == "glyph-side":  # the annotator tags a glyph the held-out view shows
            while glyph_side(key, params.holdout_fraction) != "eval":
                key = next(fresh)
        tags.append((key, *cv))
        after = report()
        new = eval_asks(after)
        fell += new.get(cv, 0) == asks.get(cv, 0) - 1 or (asks.get(cv, 0) == 1 and cv not in new)
        others = {k for k in asks.keys() | new.keys() if k != cv}
        changes = [abs(new.get(k, 0) - asks.get(k, 0)) for k in others]
        moved += any(changes)
        moved_by += sum(changes)
        now = after
        done += 1
    return {
        "hold_out": kind,
        "tags": done,
        "asked_fell": fell,
        "others_moved": moved,
        "others_moved_by": moved_by,
        "eval_ask_before": first_total,
        "eval_ask_after": sum(eval_asks(now).values()),
        "s_per_report": round(float(np.median(seconds)), 3),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    from studio.core.annotations import read_annotation_csv
    from studio.core.schema import bundled_schema_path, load_schema

    schema = load_schema(bundled_schema_path())
    tags = [(r.key, r.concept, r.value) for r in read_annotation_csv(ua_csv(), schema)]
    out = {
        "benchmark": "needs",
        "annotations": str(ua_csv()),
        "steps": args.steps,
        "runs": [follow(kind, tags, schema, args.steps) for kind in ("permutation", "glyph-side")],
    }
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
