"""The worker's ``encoder`` job kind: train the glyph encoder of the suggestions in the
background, as baseline jobs run (``run_job(ctx) -> dict``).

Parameters (``ctx.params``, all optional)::

    {"project": "/path/x.studio",   # default: the worker's own project (file or lab database)
     "seed": 0, "epochs": 4,        # studio.suggest.encoder.EncoderParams fields
     "force": false,                # train even when a fresh encoder is stored
     "cache": "/path/to/renders"}   # the render cache to read and store in (default: the
                                    # user's, where the studio's window looks too)

The job renders what is not rendered yet, trains on every rendered glyph of the project and
stores the encoder under the render cache, versioned with the fonts' hashes
(:mod:`studio.suggest.space`). Progress: rendering to 10 %, training to 100 %; a cancel is
noticed between batches. The result names the version, the glyph count and the seconds spent.

**Resumable.** After each whole epoch the training's state goes to ``encoder-resume.pt`` in
the job's folder (the checkpoint names the epoch); an attempt that was stopped goes on from
the last one and ends with the weights an uninterrupted attempt gives. On a lab database the
folder is the worker's own: a job another worker takes over starts afresh.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from studio.core.errors import StudioError

__all__ = ["ENCODER_JOB_KIND", "ENCODER_JOB_TITLE", "encoder_job_params", "run_job"]

#: the job kind (:data:`studio.worker.kinds.JOB_KINDS`) and the title its jobs are listed with
ENCODER_JOB_KIND = "encoder"
ENCODER_JOB_TITLE = "Glyph encoder (suggestions)"
#: the interrupted training's state, in the job's folder
RESUME_FILE = "encoder-resume.pt"


def encoder_job_params(
    *,
    cache: str | Path | None = None,
    epochs: int | None = None,
    seed: int | None = None,
    force: bool = False,
) -> dict[str, Any]:
    """The parameters of an encoder job, as the CLI's ``jobs encoder`` and the suggestion
    queue's T queue it. ``cache``: the render cache of the studio that will read the encoder,
    named only when it is not the user's default (a lab's worker on another machine then
    stores in its own default, where a studio on that machine looks)."""
    from studio.glyphs.render import default_render_cache_dir
    from studio.suggest.encoder import EncoderParams

    params: dict[str, Any] = {"force": force}
    if epochs is not None:
        params["epochs"] = epochs
    if seed is not None:
        params["seed"] = seed
    EncoderParams.from_json(params)  # a bad epoch count or seed is refused here, by name
    if cache is not None and Path(cache).resolve() != default_render_cache_dir().resolve():
        params["cache"] = str(cache)
    return params


def run_job(ctx: Any) -> dict[str, Any]:
    from studio.app import Studio
    from studio.glyphs.render import RenderCache
    from studio.store.dbfile import is_database_url
    from studio.store.project import Project
    from studio.suggest.encoder import EncoderParams, load_training_state, save_training_state
    from studio.suggest.space import load_encoder, project_images, train_and_store

    params = dict(ctx.params or {})
    own = getattr(ctx, "location", None)
    if own is not None and is_database_url(str(own)) and params.get("project") not in (None, own):
        # a lab's jobs come from any member: one must not make a colleague's worker open (and
        # write the renders of) another project than the lab's own
        raise StudioError("an encoder job on a lab database trains that database's glyphs only")
    location = params.get("project") or ctx.project_path or own
    if location is None:
        raise StudioError("an encoder job needs a project")
    relative = isinstance(location, str) and "://" not in location
    if relative and ctx.project_path is not None and not Path(location).is_absolute():
        location = str(Path(ctx.project_path).parent / location)
    enc_params = EncoderParams.from_json(params)
    cache = None
    if params.get("cache") is not None:
        # a folder this worker writes in: only a job of the user's own project file may name
        # one; a lab database's jobs come from any member, and a worker writes only in its
        # own cache (a member must not make a colleague's worker write elsewhere)
        queue = [ctx.project_path, getattr(ctx, "location", None), location]
        if any(q is not None and is_database_url(str(q)) for q in queue):
            raise StudioError(
                "an encoder job on a lab database cannot name a render cache: each worker "
                "stores in its own"
            )
        if not isinstance(params["cache"], str) or not params["cache"].strip():
            raise StudioError("the encoder job's 'cache' must be a folder path")
        cache = RenderCache(params["cache"])
    t0 = time.perf_counter()
    with Studio(Project.open(location), cache=cache) as studio:
        if not params.get("force"):
            stored = load_encoder(studio, enc_params)
            if stored is not None:
                ctx.log(f"encoder {stored.version} is stored for these fonts: nothing to train")
                ctx.progress(1.0, "the stored encoder is fresh")
                return {"version": stored.version, "glyphs": len(stored.keys), "trained": False}

        def on_render(done: int, total: int) -> None:
            ctx.check_cancel()
            ctx.progress(0.1 * done / max(1, total), f"rendering {done}/{total} glyphs")

        images = project_images(studio, on_render)
        ctx.log(f"training on {len(images):,} rendered glyphs ({enc_params.epochs} epochs)")

        def on_batch(done: int, total: int) -> None:
            ctx.progress(0.1 + 0.9 * done / max(1, total), f"training: batch {done}/{total}")

        def should_stop() -> bool:
            ctx.check_cancel()  # raises the worker's JobCancelled
            return False

        # an attempt stopped part-way (cancelled, the studio closed, the process killed)
        # left the state after its last whole epoch in the job's folder: the next attempt
        # goes on from there and ends with the weights an uninterrupted one gives
        state_file = Path(ctx.work_dir) / RESUME_FILE
        saved = ctx.checkpoint().get("resume")
        resume = load_training_state(state_file) if saved else None
        if saved and resume is None:
            ctx.log(
                "the interrupted training's state is missing or unreadable: it starts afresh",
                "warning",
            )

        def on_epoch(state: dict[str, Any]) -> None:
            save_training_state(state, state_file)
            ctx.save_checkpoint({"resume": {"epoch": int(state["epoch"])}})

        enc = train_and_store(
            studio,
            images,
            enc_params,
            progress=on_batch,
            should_stop=should_stop,
            on_epoch=on_epoch,
            resume=resume,
        )
        resumed = enc.meta.get("resumed_from_epoch", 0)
        if resumed:
            ctx.log(f"the encoder's training went on from epoch {resumed} of an earlier attempt")
        elif resume is not None:
            ctx.log(
                "the interrupted training's state was of other glyphs or settings (or did "
                "not fit): trained afresh",
                "warning",
            )
        state_file.unlink(missing_ok=True)
    ctx.set_device("cpu")
    ctx.log(
        f"encoder {enc.version} trained in {enc.meta.get('train_seconds')} s, stored in "
        f"{Path(studio.cache.root) / 'encoders'}"
    )
    ctx.progress(1.0, "done")
    return {
        "version": enc.version,
        "glyphs": len(enc.keys),
        "trained": True,
        "train_seconds": enc.meta.get("train_seconds"),
        "resumed_from_epoch": enc.meta.get("resumed_from_epoch", 0),
        "seconds": round(time.perf_counter() - t0, 2),
    }
