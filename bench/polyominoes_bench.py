"""Benchmark `polyominoes`: enumerating polyominoes and polycubes by canonical form.

Timed (best of ``--repeat`` passes, each in this process):

- ``free_2d_10``: the 4,655 free 10-ominoes (``enumerate_animals`` with the 8 symmetries of the
  square): Redelmeier's algorithm makes each of the 36,446 fixed 10-ominoes once, then numpy
  takes every canonical form at once and keeps one member per orbit;
- ``free_3d_7`` and ``one_sided_3d_7``: the 607 free and 1,023 one-sided heptacubes (48 and 24
  symmetries over the 23,502 fixed ones).

Reference, measured in the same run: the obvious method — grow every shape of n − 1 cells by one
cell in every way and dedupe by canonical form, one shape at a time in pure Python
(``naive_enumerate``) — on smaller sizes (free 8-ominoes, one-sided pentacubes; it is too slow
for the sizes above), against the fast path on the same sizes. ``ratio`` = reference seconds
over fast seconds; both must find the same shapes (``agree``).

Prints one JSON object on stdout.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def _best(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t)
    return best, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    from studio.stimuli.polycube import ROTATIONS_3D, SYMMETRIES_3D
    from studio.stimuli.polyomino import (
        SYMMETRIES_2D,
        as_shapes,
        enumerate_animals,
        naive_enumerate,
    )

    timed = {
        "free_2d_10": (10, 2, SYMMETRIES_2D, 4655),
        "free_3d_7": (7, 3, SYMMETRIES_3D, 607),
        "one_sided_3d_7": (7, 3, ROTATIONS_3D, 1023),
    }
    results: dict[str, Any] = {}
    for name, (n, dims, group, expected) in timed.items():
        seconds, shapes = _best(
            lambda n=n, d=dims, g=group: enumerate_animals(n, d, g), args.repeat
        )
        results[name] = {
            "seconds": round(seconds, 4),
            "count": len(shapes),
            "ok": len(shapes) == expected,
        }

    reference = {}
    for name, (n, dims, group) in {
        "free_2d_8": (8, 2, SYMMETRIES_2D),
        "one_sided_3d_5": (5, 3, ROTATIONS_3D),
    }.items():
        fast_s, fast = _best(lambda n=n, d=dims, g=group: enumerate_animals(n, d, g), args.repeat)
        naive_s, naive = _best(lambda n=n, d=dims, g=group: naive_enumerate(n, d, g), 1)
        reference[name] = {
            "fast_seconds": round(fast_s, 4),
            "reference_seconds": round(naive_s, 4),
            "ratio": round(naive_s / fast_s, 1),
            "count": len(fast),
            "agree": set(as_shapes(fast)) == naive,
        }
    print(
        json.dumps(
            {
                "benchmark": "polyominoes",
                "python": platform.python_version(),
                "repeat": args.repeat,
                **results,
                "reference": reference,
            },
            indent=1,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
