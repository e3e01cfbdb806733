"""``python -m studio.worker run PROJECT JOB_ID``: the worker child process (see
:mod:`studio.worker.child`). The frozen app dispatches ``analogy-studio worker ...`` to
:func:`main` with the arguments after ``worker``."""

from studio.worker.child import main

__all__ = ["main"]

if __name__ == "__main__":
    raise SystemExit(main())
