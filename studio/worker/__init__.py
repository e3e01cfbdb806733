"""Background jobs in separate processes: a crash, an out-of-memory kill or a CUDA error ends
the job's process, never the studio.

- :mod:`studio.worker.host` (``WorkerHost``): in the studio, starts one child process per job
  from the project's queue (:mod:`studio.store.jobs`), reaps it, enforces cancels;
- :mod:`studio.worker.child` (``python -m studio.worker run PROJECT JOB_ID``, or
  ``analogy-studio worker run ...`` in the bundle): runs one claimed job and records its end;
- :mod:`studio.worker.context`: what a job function receives (``JobContext``);
- :mod:`studio.worker.kinds`: the job kinds, imported lazily;
- :mod:`studio.worker.device`: the device choice (torch is imported there, inside functions).

Nothing is imported here, so starting a child costs only what it uses.
"""
