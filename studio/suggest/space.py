"""Where every glyph of a project sits for the suggestions: the learned encoder's embedding
concatenated with the image features the studio already computes (:mod:`studio.vet.features`).

**The stored encoder.** Its weights and the embeddings of the glyphs it has seen are one
``.npz`` file under the render cache (``<cache>/encoders/<version>.npz``), written atomically.
The version is a hash of the fonts that render the project's glyphs (``{font id: sha256}``, as
:meth:`studio.app.Studio.font_manifest` gives it and ``split.json`` records) and of the training
parameters: a changed font file or a changed font set is another version, so the encoder is
stale and trains again; the file is content-addressed, so projects on the same fonts share it
and a lab database (no folder of its own) keeps it the same way. Glyphs added later with the same
fonts are embedded with the stored weights (no retraining) and the file is updated.

Only :func:`embed_missing` and :func:`train_and_store` import torch (lazily, through
:mod:`studio.suggest.encoder`); reading a stored encoder needs numpy alone.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from studio.core.errors import StudioError
from studio.core.fileio import atomic_write_bytes
from studio.core.keys import GlyphKey
from studio.suggest.encoder import EncoderParams, OnEpoch

if TYPE_CHECKING:
    from studio.app import Studio

__all__ = [
    "ENCODER_FORMAT",
    "FEATURE_WEIGHT",
    "GlyphSpace",
    "StoredEncoder",
    "encoder_path",
    "encoder_version",
    "feature_matrix",
    "glyph_space",
    "load_encoder",
    "project_images",
    "space_from_images",
    "train_and_store",
]

#: bump when the network, its input or the file layout changes (old files are then stale)
ENCODER_FORMAT = 1
#: the image features' share of the combined vector (the embedding has weight 1)
FEATURE_WEIGHT = 0.5

Progress = Callable[[int, int], None]
ShouldStop = Callable[[], bool]


@dataclass
class GlyphSpace:
    """Every rendered glyph of a project as a row of ``vectors`` (L2-normalised, so a dot
    product is the cosine similarity). ``source`` says what the rows are made of:
    ``"encoder+features"`` or ``"features"``."""

    keys: list[GlyphKey]
    vectors: np.ndarray
    source: str
    encoder_version: str | None = None

    def __post_init__(self) -> None:
        self.index = {k: i for i, k in enumerate(self.keys)}

    def rows(self, keys: Sequence[GlyphKey]) -> np.ndarray:
        return np.array([self.index[k] for k in keys if k in self.index], dtype=np.int64)


@dataclass
class StoredEncoder:
    version: str
    params: EncoderParams
    weights: dict[str, np.ndarray]
    keys: list[GlyphKey]
    embeddings: np.ndarray
    meta: dict[str, Any]


def project_images(studio: Studio, progress: Progress | None = None) -> dict[GlyphKey, np.ndarray]:
    """The 80×80 render of every glyph of the project that has one (rendered into the cache
    where it is missing), in the project's order (font id, then code point)."""
    from studio.splits import glyph_images

    keys = [g.key for g in studio.project.glyphs() if g.status not in ("uncovered", "missing")]
    studio.check_fonts(keys)  # a changed font is named before any work
    out: dict[GlyphKey, np.ndarray] = {}
    step = 500
    for i in range(0, len(keys), step):
        out.update(glyph_images(studio, keys[i : i + step]))
        if progress is not None:
            progress(min(i + step, len(keys)), len(keys))
    return out


def encoder_version(fonts: Mapping[str, str], params: EncoderParams) -> str:
    """The stored encoder's version: a hash of the fonts' hashes and the training parameters
    (and :data:`ENCODER_FORMAT`)."""
    body = json.dumps(
        {
            "format": ENCODER_FORMAT,
            "fonts": dict(sorted(fonts.items())),
            "params": params.to_json(),
        },
        sort_keys=True,
    )
    return hashlib.sha256(body.encode()).hexdigest()[:32]


def encoder_path(studio: Studio, version: str) -> Path:
    return Path(studio.cache.root) / "encoders" / f"{version}.npz"


def _write(path: Path, enc: StoredEncoder) -> None:
    buf = io.BytesIO()
    arrays = {f"w:{k}": v for k, v in enc.weights.items()}
    np.savez(
        buf,
        keys=np.array([str(k) for k in enc.keys], dtype=str),
        embeddings=enc.embeddings.astype(np.float32),
        meta=np.array(
            json.dumps({**enc.meta, "version": enc.version, "params": enc.params.to_json()})
        ),
        **arrays,
    )
    atomic_write_bytes(path, buf.getvalue())


def load_encoder(studio: Studio, params: EncoderParams | None = None) -> StoredEncoder | None:
    """The stored encoder of the project's current fonts and ``params``, or None when there
    is none (never trained, or stale: a font changed). A damaged file reads as none."""
    params = params or EncoderParams()
    version = encoder_version(studio.font_manifest(), params)
    path = encoder_path(studio, version)
    if not path.exists():
        return None
    try:
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(str(z["meta"]))
            weights = {k[2:]: np.array(z[k]) for k in z.files if k.startswith("w:")}
            keys = [GlyphKey.parse(str(k)) for k in z["keys"]]
            emb = np.array(z["embeddings"], dtype=np.float32)
    except (OSError, ValueError, KeyError, json.JSONDecodeError):
        return None
    if meta.get("version") != version or emb.shape[0] != len(keys):
        return None
    return StoredEncoder(version, params, weights, keys, emb, meta)


def train_and_store(
    studio: Studio,
    images: Mapping[GlyphKey, np.ndarray],
    params: EncoderParams | None = None,
    *,
    progress: Progress | None = None,
    should_stop: ShouldStop | None = None,
    on_epoch: OnEpoch | None = None,
    resume: dict[str, Any] | None = None,
) -> StoredEncoder:
    """Train the encoder on ``images`` (every rendered glyph of the project), embed them and
    store both under the current fonts' version. ``progress(done, total)`` counts training
    batches; ``on_epoch`` and ``resume``: an interrupted training's state, given and taken
    back (:func:`~studio.suggest.encoder.train_encoder`)."""
    from studio.suggest.encoder import embed_images, train_encoder

    params = params or EncoderParams()
    keys = sorted(images)
    if not keys:
        raise StudioError("the project has no rendered glyph to learn an encoder from")
    stack = np.stack([images[k] for k in keys])
    trained = train_encoder(
        stack, params, progress=progress, should_stop=should_stop, on_epoch=on_epoch, resume=resume
    )
    emb = embed_images(stack, params, trained.weights)
    version = encoder_version(studio.font_manifest(), params)
    enc = StoredEncoder(
        version,
        params,
        trained.weights,
        keys,
        emb,
        {
            "glyphs": len(keys),
            "train_seconds": round(trained.seconds, 2),
            "final_loss": trained.losses[-1] if trained.losses else None,
            "resumed_from_epoch": trained.resumed_from,
            "fonts": studio.font_manifest(),
        },
    )
    _write(encoder_path(studio, version), enc)
    return enc


def embed_missing(
    studio: Studio, enc: StoredEncoder, images: Mapping[GlyphKey, np.ndarray]
) -> StoredEncoder:
    """Add the embeddings of glyphs of ``images`` the stored encoder has not seen (glyphs
    added since it was trained, same fonts), and store the file again."""
    from studio.suggest.encoder import embed_images

    seen = set(enc.keys)
    new = sorted(k for k in images if k not in seen)
    if not new:
        return enc
    emb = embed_images(np.stack([images[k] for k in new]), enc.params, enc.weights)
    enc.keys = [*enc.keys, *new]
    enc.embeddings = np.concatenate([enc.embeddings, emb])
    _write(encoder_path(studio, enc.version), enc)
    return enc


def feature_matrix(images: Sequence[np.ndarray]) -> np.ndarray:
    """The image features of :mod:`studio.vet.features` as a ``N × 10`` float matrix, each
    column standardised over these glyphs (counts and the aspect ratio on a log scale)."""
    from studio.vet.features import compute_features_batch

    if len(images) == 0:
        return np.zeros((0, 10), np.float32)
    feats = compute_features_batch(np.stack([np.asarray(i) for i in images]))
    m = np.array(
        [
            [
                f.ink_fraction,
                np.log(max(f.aspect_ratio, 1e-3)),
                f.bbox_size,
                np.log1p(f.components),
                np.log1p(f.holes),
                np.clip(f.euler, -8, 8),
                f.mirror_lr,
                f.mirror_tb,
                f.rot180,
                f.rot90,
            ]
            for f in feats
        ],
        dtype=np.float64,
    )
    std = m.std(axis=0)
    m = (m - m.mean(axis=0)) / np.where(std > 1e-9, std, 1.0)
    return m.astype(np.float32)


def _normalise(m: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(m, axis=1, keepdims=True)
    return (m / np.where(norm > 1e-12, norm, 1.0)).astype(np.float32)


def space_from_images(
    images: Mapping[GlyphKey, np.ndarray],
    embeddings: Mapping[GlyphKey, np.ndarray] | None = None,
    *,
    feature_weight: float = FEATURE_WEIGHT,
    version: str | None = None,
) -> GlyphSpace:
    """The space of ``images``: each glyph's embedding (L2-normalised) beside its
    standardised image features (weight ``feature_weight``, spread over the 10 columns), the
    whole row L2-normalised. Without ``embeddings``, the features alone."""
    keys = sorted(images)
    feats = feature_matrix([images[k] for k in keys])
    if embeddings is None:
        return GlyphSpace(keys, _normalise(feats), "features")
    keys = [k for k in keys if k in embeddings]
    rows = [i for i, k in enumerate(sorted(images)) if k in embeddings]
    emb = _normalise(np.stack([np.asarray(embeddings[k], np.float32) for k in keys]))
    f = feats[rows] * (feature_weight / np.sqrt(feats.shape[1]))
    return GlyphSpace(keys, _normalise(np.hstack([emb, f])), "encoder+features", version)


def glyph_space(
    studio: Studio,
    *,
    encoder: str = "auto",
    params: EncoderParams | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    should_stop: ShouldStop | None = None,
) -> GlyphSpace:
    """The project's glyph space. ``encoder``: ``"auto"`` uses the stored encoder when it is
    fresh and trains one otherwise; ``"stored"`` refuses (StudioError) when none is fresh;
    ``"train"`` always trains; ``"none"`` uses the image features alone.
    ``progress(stage, done, total)`` with stages ``"render"`` and ``"train"``."""
    if encoder not in ("auto", "stored", "train", "none"):
        raise StudioError(f"unknown encoder mode {encoder!r}")

    def stage(name: str) -> Progress | None:
        if progress is None:
            return None
        return lambda done, total: progress(name, done, total)

    images = project_images(studio, stage("render"))
    if encoder == "none":
        return space_from_images(images)
    params = params or EncoderParams()
    enc = None if encoder == "train" else load_encoder(studio, params)
    if enc is None and encoder == "stored":
        raise StudioError(
            "the project has no encoder for its current fonts: train one (the worker's "
            "'encoder' job, or `analogy-studio suggest` without --stored-only), or use "
            "--features-only"
        )
    if enc is None:
        enc = train_and_store(
            studio, images, params, progress=stage("train"), should_stop=should_stop
        )
    else:
        enc = embed_missing(studio, enc, images)
    embeddings = dict(zip(enc.keys, enc.embeddings, strict=True))
    return space_from_images(images, embeddings, version=enc.version)
