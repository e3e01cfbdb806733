"""What keeps a worker child from outliving or wedging the studio: the parent-death signal, the
memory a process tree holds, and the words for running out of it.

- :func:`die_with_parent` (Linux): the kernel sends the child SIGKILL the moment the thread that
  started it exits, so a child stuck in native code (a C call holding the GIL, a wedged
  allocator) still ends with its studio. Elsewhere the child's watcher thread notices the
  studio's death instead (cooperatively: it needs the GIL).
- :func:`tree_rss`: resident memory of a process and all its descendants (psutil), which the
  host compares with the job's limit on every poll. The address-space limit (``RLIMIT_AS``) is
  not used for this: torch reserves several times the memory it touches (a CPU baseline child
  holding 470 MB resident had 1.1 GB of address space), so a limit on it fails jobs that fit.
- :func:`default_memory_limit`: half of the machine's memory, so one runaway job cannot push
  the studio (and the desktop) into swap or the kernel's OOM killer.
- :func:`out_of_memory_text`: whether an exception means the process could not allocate, and
  what to tell the user.
"""

from __future__ import annotations

import resource
import sys

import psutil

from studio.core.procs import die_with_parent

__all__ = [
    "DEFAULT_MEMORY_SHARE",
    "MB",
    "default_memory_limit",
    "die_with_parent",
    "mb",
    "out_of_memory_text",
    "own_peak_rss",
    "tree_rss",
]

MB = 1024 * 1024
#: The share of the machine's memory one job may hold when neither the job nor the host says.
DEFAULT_MEMORY_SHARE = 0.5


def mb(n_bytes: int | float) -> int:
    """Bytes as whole megabytes (MiB), rounded."""
    return round(n_bytes / MB)


def usage_text(used: int | float, limit: int | float) -> str:
    """ "used X MB, limit Y MB", in whole megabytes unless the use would read as the limit
    itself ("used 200 MB, limit 200 MB" for 200.4 MB, as the suite once met it)."""
    shown = str(mb(used)) if mb(used) != mb(limit) else f"{used / MB:.1f}"
    return f"used {shown} MB, limit {mb(limit)} MB"


def tree_rss(pid: int) -> int:
    """Resident bytes of process ``pid`` and all its descendants (0 when it is gone). A process
    that vanishes while it is read counts as 0."""
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return 0
    total = 0
    for proc in procs:
        try:
            total += proc.memory_info().rss
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return total


def own_peak_rss() -> int:
    """The most resident memory this process (or the largest of its waited-for children) held,
    in bytes: the peak the host's polling may have missed between polls.

    On Linux the process's own peak is ``VmHWM`` from ``/proc/self/status``, which starts
    afresh at ``exec``; ``getrusage``'s ``ru_maxrss`` does not, so a worker started by a
    studio holding 1 GB would report 1 GB before doing anything."""
    scale = 1 if sys.platform == "darwin" else 1024  # Linux reports KiB, macOS bytes
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    own = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * scale
    return int(max(own, children))


def default_memory_limit(share: float = DEFAULT_MEMORY_SHARE) -> int:
    """``share`` of the machine's physical memory, in bytes."""
    return int(psutil.virtual_memory().total * share)


def _address_space_limit() -> int | None:
    try:
        soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
    except (OSError, ValueError):
        return None
    return None if soft == resource.RLIM_INFINITY else int(soft)


_OOM_WORDS = (
    "failed to map segment",  # a shared library that no longer fits (ulimit -v)
    "cannot allocate memory",  # ENOMEM from mmap, fork, thread creation
    "can't allocate memory",  # torch's DefaultCPUAllocator
    "std::bad_alloc",
    "out of memory",
)


def out_of_memory_text(error: BaseException) -> str | None:
    """``"out of memory: ..."`` when ``error`` (or an exception it was raised from) says the
    process could not allocate: a ``MemoryError``, an allocator's or loader's ENOMEM; None
    otherwise. Names the address-space limit (``ulimit -v``) when one is set."""
    seen: set[int] = set()
    cause: BaseException | None = error
    found: BaseException | None = None
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, MemoryError) or any(w in str(cause).lower() for w in _OOM_WORDS):
            found = cause
            break
        cause = cause.__cause__ or cause.__context__
    if found is None:
        return None
    what = f"{type(found).__name__}: {found}".rstrip(": ")
    limit = _address_space_limit()
    where = (
        f"; this process may use {mb(limit)} MB of address space (ulimit -v)"
        if limit is not None
        else ""
    )
    return f"out of memory: the job could not allocate memory ({what}){where}"
