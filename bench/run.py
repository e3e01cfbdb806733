"""Run one benchmark by name: ``python bench/run.py NAME [ARGS...]``.

Each benchmark is a module in this folder with a ``main()`` that prints ONE JSON object on
stdout. To add one, write ``bench/<something>_bench.py`` and add a line to ``BENCHMARKS``.
The module runs with ``sys.argv = [its own path, *ARGS]``, as if it had been started directly,
so a benchmark that re-launches itself (``sys.executable, __file__, ...``) keeps working.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent

#: Benchmark name → module in bench/ (without .py).
BENCHMARKS: dict[str, str] = {
    "render": "render_bench",
    "import": "import_bench",
    "grid": "grid_bench",
    "generate": "generate_bench",
    "polyominoes": "polyominoes_bench",
    "preview3d": "preview3d_bench",
    "worker": "worker_bench",
    "answersets": "answersets_bench",
    "fuzz": "fuzz",
    "export": "export_bench",
    "board": "board_bench",
    "killloop": "killloop_bench",
    "split_write": "split_write_bench",
    "kiva": "kiva_bench",
    "baselines": "baseline_bench",
    "lab": "lab_bench",
    "gpu": "gpu_bench",
    "labsec": "labsec_bench",
    "needs": "needs_bench",
    "pilot": "pilot_bench",
    "tagger": "tagger_bench",
    "suggest": "suggest_bench",
}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help") or args[0] not in BENCHMARKS:
        names = ", ".join(sorted(BENCHMARKS))
        print(f"usage: python bench/run.py NAME [ARGS...]   (NAME: {names})", file=sys.stderr)
        return 0 if args and args[0] in ("-h", "--help") else 2
    name, rest = args[0], args[1:]
    for path in (str(REPO_ROOT), str(BENCH_DIR)):
        if path not in sys.path:
            sys.path.insert(0, path)
    module = importlib.import_module(BENCHMARKS[name])
    sys.argv = [str(BENCH_DIR / f"{BENCHMARKS[name]}.py"), *rest]
    result = module.main()
    return int(result) if isinstance(result, int) else 0


if __name__ == "__main__":
    raise SystemExit(main())
