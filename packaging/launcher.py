"""Entry script of the frozen (PyInstaller) Analogy Studio.

``multiprocessing.freeze_support()`` must run before anything else: the glyph renderer starts
worker processes (``studio.glyphs.render``), and in a frozen app every such process — a
``spawn`` worker, the fork server, the resource tracker — is a new copy of this executable with
special arguments. PyInstaller's multiprocessing runtime hook makes ``freeze_support()`` spot
those arguments, run the helper's code and exit; without the call each worker would start
another studio (parse the worker's arguments as a command line, or open a window).

``studio.cli`` is imported only afterwards, so helper processes never pay for it.

``analogy-studio worker run PROJECT JOB`` is the baselines' worker process
(:mod:`studio.worker`): the studio starts this same executable for each job, so a crash, an
out-of-memory kill or a CUDA error ends that process and never the window.
"""

import multiprocessing
import sys

if __name__ == "__main__":
    multiprocessing.freeze_support()

    if sys.argv[1:2] == ["worker"]:
        from studio.worker.__main__ import main as worker_main

        sys.exit(worker_main(sys.argv[2:]))

    from studio.cli import main

    sys.exit(main())
