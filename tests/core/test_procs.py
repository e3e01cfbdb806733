"""One count of the cores a process may use and one start method for every pool (issue 27:
five copies of each)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from studio.core.procs import pool_context, usable_cores

AFFINITY = hasattr(os, "sched_setaffinity") and len(os.sched_getaffinity(0)) >= 2


@pytest.mark.skipif(not AFFINITY, reason="needs CPU affinity and two cores")
def test_every_pool_and_thread_count_follows_the_process_s_cpu_affinity() -> None:
    """Under ``taskset -c 0`` (a container's or a job scheduler's limit) the count is one for
    the generator's pool, the split writer's, the stimulus pools and torch's threads alike."""
    code = (
        "import os; os.sched_setaffinity(0, {0});"
        "from studio.core.procs import usable_cores;"
        "from studio.splits import default_workers;"
        "from studio.families.glyph_pmp.export import default_workers as export_workers;"
        "from studio.stimuli.loop import pool_workers;"
        "from studio.worker.device import cpu_threads;"
        "print(usable_cores(), default_workers(), export_workers(10**6),"
        " pool_workers(10**6), cpu_threads(False), cpu_threads(True))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.split() == ["1"] * 6
    assert usable_cores() == len(os.sched_getaffinity(0))


def test_pools_start_their_workers_from_a_fork_server_where_there_is_one() -> None:
    import multiprocessing

    ctx = pool_context()
    expected = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    assert ctx.get_start_method() == expected
