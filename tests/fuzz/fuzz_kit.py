"""Mutators and the loader table shared by the fuzz tests (``tests/fuzz``) and ``bench/fuzz.py``.

Every mutator takes a ``random.Random``: the tests pass hypothesis's ``st.randoms()`` (so a
failing example shrinks and replays), the benchmark a seeded ``random.Random(seed)``.

A **loader** (:class:`Loader`) is one kind of file a person hands the studio: how to make its
seed inputs from real data (:meth:`Loader.seed`), how to mutate one (``mutate``), and how to
feed an input to the studio (``run``: returns normally when the studio accepted it, raises
StudioError when it refused it cleanly; anything else is a bug). ``run`` also reports whether
a project file changed (a refused input must leave it byte for byte as it was). Fonts, meshes
and project files are added later as more entries of :data:`LOADERS`.
"""

from __future__ import annotations

import copy
import csv
import hashlib
import io
import json
import random
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

# ---- nasty values -------------------------------------------------------------------------------
#: text that has broken a loader before, or might
NASTY_TEXT = [
    "",
    "\x00",
    "\ud800",
    "\udfff",
    "\ufeff",
    "\u2028",
    "\r",
    '"',
    "'",
    ",",
    "\n",
    "NaN",
    "-Infinity",
    "1e999",
    "9" * 5000,
    "x" * 140_000,
    "é",
    "\U0001f341",
    "0x",
    "U+",
    "-1",
]
NASTY_CODEPOINTS = [
    "D800",
    "DFFF",
    "0",
    "1F",
    "7F",
    "9F",
    "110000",
    "FFFFFFF",
    "-1",
    "",
    "zz",
    "0x41",
]
NASTY_JSON: list[Any] = [
    None,
    True,
    0,
    -1,
    2**70,
    1.5,
    float("nan"),
    float("inf"),
    "",
    "\ud800",
    "x" * 1000,
    [],
    {},
    [[]],
    {"": None},
    "U+D800@symbola",
    "U+0000@symbola",
    "U+110000@symbola",
]


def deep_json(depth: int, rng: random.Random) -> str:
    """A JSON text nested ``depth`` levels: arrays, objects or a mix."""
    kind = rng.choice(["[", '{"a":', "mix"])
    if kind == "mix":
        opens = "".join(rng.choice(["[", '{"a":']) for _ in range(depth))
    else:
        opens = kind * depth
    closes = "".join("]" if o == "[" else "}" for o in opens.replace('{"a":', "{"))[::-1]
    return opens + "1" + closes


# ---- byte and text mutators ---------------------------------------------------------------------
def mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    """One seeded mutation of a binary file: truncation, bit/byte flips, insertion, deletion,
    a duplicated or zeroed chunk."""
    if not data:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64)))
    op = rng.choice(["truncate", "flip", "flips", "insert", "delete", "duplicate", "zero"])
    n = len(data)
    i = rng.randrange(n)
    b = bytearray(data)
    if op == "truncate":
        return bytes(b[: rng.randrange(n)])
    if op == "flip":
        b[i] ^= 1 << rng.randrange(8)
    elif op == "flips":
        for _ in range(rng.randrange(2, 32)):
            b[rng.randrange(n)] = rng.randrange(256)
    elif op == "insert":
        b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 32)))
    elif op == "delete":
        del b[i : i + rng.randrange(1, 64)]
    elif op == "duplicate":
        j = min(n, i + rng.randrange(1, 256))
        b[i:i] = b[i:j]
    else:
        b[i : i + rng.randrange(1, 256)] = bytes(min(256, n - i))
    return bytes(b)


def mutate_text(text: str, rng: random.Random) -> str:
    """One mutation of a text file: a nasty string or deep JSON inserted, a span deleted,
    lines dropped or swapped, a quote or bracket added."""
    op = rng.choice(["nasty", "deep", "delete", "lines", "char", "swap"])
    i = rng.randrange(len(text) + 1)
    if op == "nasty":
        return text[:i] + rng.choice(NASTY_TEXT) + text[i:]
    if op == "deep":
        return text[:i] + deep_json(rng.choice([65, 200, 1500, 50_000]), rng) + text[i:]
    if op == "delete":
        return text[:i] + text[i + rng.randrange(1, 200) :]
    if op == "char":
        return text[:i] + rng.choice('[]{}",:\\') + text[i:]
    lines = text.splitlines(keepends=True)
    if not lines:
        return text
    if op == "lines":
        keep = rng.randrange(len(lines) + 1)
        return "".join(lines[:keep])
    a, b = rng.randrange(len(lines)), rng.randrange(len(lines))
    lines[a], lines[b] = lines[b], lines[a]
    return "".join(lines)


def encode(text: str, rng: random.Random) -> bytes:
    """Text as the bytes of a file: UTF-8 (lone surrogates kept as raw bytes), sometimes with
    invalid UTF-8 or a BOM."""
    data = text.encode("utf-8", "surrogatepass")
    r = rng.random()
    if r < 0.08:
        i = rng.randrange(len(data) + 1)
        data = data[:i] + rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80\x80"]) + data[i:]
    elif r < 0.12:
        data = b"\xef\xbb\xbf" + data
    return data


# ---- structure-aware JSON mutation --------------------------------------------------------------
def _nodes(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _nodes(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _nodes(v, (*path, i))
    return out


def mutate_json_value(data: Any, rng: random.Random) -> Any:
    """``data`` (a parsed JSON document, not changed) with one node replaced by a nasty value,
    deleted, duplicated or wrapped deep."""
    data = copy.deepcopy(data)
    nodes = [p for p in _nodes(data) if p]
    if not nodes:
        return rng.choice(NASTY_JSON)
    where = rng.choice(nodes)
    parent = data
    for p in where[:-1]:
        parent = parent[p]
    last = where[-1]
    op = rng.choice(["replace", "replace", "delete", "wrap", "retype"])
    if op == "replace":
        parent[last] = copy.deepcopy(rng.choice(NASTY_JSON))
    elif op == "delete":
        del parent[last]
    elif op == "wrap":
        value = parent[last]
        for _ in range(rng.choice([2, 70, 500])):
            value = [value]
        parent[last] = value
    else:
        value = parent[last]
        parent[last] = str(value) if not isinstance(value, str) else [value]
    return data


def dump_json(data: Any, rng: random.Random) -> str:
    """JSON text of a (mutated) document; NaN and infinities are written as Python writes them."""
    return json.dumps(data, indent=rng.choice([None, 1]), ensure_ascii=rng.random() < 0.5)


def mutate_json_text(text: str, rng: random.Random) -> str:
    """Half the time a structural mutation of the parsed document, else a text mutation."""
    if rng.random() < 0.5:
        try:
            return dump_json(mutate_json_value(json.loads(text), rng), rng)
        except (ValueError, RecursionError):
            pass
    return mutate_text(text, rng)


# ---- CSV mutation -------------------------------------------------------------------------------
def mutate_csv(text: str, rng: random.Random) -> str:
    """An annotation CSV with a cell replaced by a nasty one (code points, long fields, other
    concepts' values), rows dropped down to none, columns added, or a text mutation."""
    rows = list(csv.reader(io.StringIO(text)))
    op = rng.choice(["cell", "cell", "codepoint", "zero-rows", "columns", "long", "text"])
    if op == "text" or len(rows) < 2:
        return mutate_text(text, rng)
    r = rng.randrange(1, len(rows))
    if op == "cell":
        rows[r][rng.randrange(4)] = rng.choice(
            [*NASTY_TEXT[:14], rows[rng.randrange(len(rows))][1]]
        )
    elif op == "codepoint":
        rows[r][2] = rng.choice(NASTY_CODEPOINTS)
    elif op == "zero-rows":
        rows = rows[: rng.choice([0, 1])]
    elif op == "columns":
        rows[r] = rows[r] + ["x"] * rng.randrange(1, 3) if rng.random() < 0.5 else rows[r][:2]
    else:
        rows[r][rng.randrange(4)] = "y" * rng.choice([131_073, 200_000])
    buf = io.StringIO()
    csv.writer(buf, lineterminator=rng.choice(["\n", "\r\n"])).writerows(rows)
    return buf.getvalue()


# ---- UA folder mutation -------------------------------------------------------------------------
def mutate_tree(names: list[str], rng: random.Random) -> list[str]:
    """A UA ``Annotations`` layout (relative file paths ``<concept>-<value>/0x<cp>_<font>.png``)
    with names mutated: bad code points, unknown concepts or values, odd characters, no files
    at all, a file nested one level too deep."""
    names = list(names)
    op = rng.choice(["cp", "cp", "folder", "file", "empty", "nested", "hidden", "unicode"])
    i = rng.randrange(len(names)) if names else 0
    if op == "empty" or not names:
        return [n.split("/")[0] + "/" for n in names[: rng.randrange(3)]]
    folder, file = names[i].split("/")
    if op == "cp":
        font = file.split("_", 1)[1]
        names[i] = f"{folder}/0x{rng.choice(NASTY_CODEPOINTS)}_{font}"
    elif op == "folder":
        names[i] = f"{rng.choice(['zzz-1', folder + '-nosuchvalue', '-', folder.upper()])}/{file}"
    elif op == "file":
        names[i] = f"{folder}/{rng.choice(['x.png', file + '.bak', file[:-4], '0x41_.png'])}"
    elif op == "nested":
        names[i] = f"{folder}/{file}/{file}"
    elif op == "hidden":
        names.append(f"{folder}/.{file}")
    else:  # "\udcff" is the byte 0xFF in a file name (not UTF-8), as os.listdir gives it
        odd = rng.choice(["é", "\u2028", " ", "\udcff", "\t"])
        names[i] = f"{folder}/{file[:-4]}{odd}.png"
    return names


def write_tree(root: Path, names: list[str]) -> None:
    """Make the folder layout ``names`` under ``root`` (a name ending in / is an empty folder;
    a surrogate-escaped name becomes the raw bytes it stands for)."""
    for name in names:
        path = root / name
        if name.endswith("/"):
            path.mkdir(parents=True, exist_ok=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_dir():
            continue
        path.write_bytes(b"\x89PNG not read by the importer")


# ---- split folder mutation ----------------------------------------------------------------------
def _npz(arrays: dict[str, Any]) -> bytes:
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    return buf.getvalue()


def mutate_npz_arrays(data: bytes, rng: random.Random) -> bytes:
    """A puzzle npz whose arrays are wrong: images of another shape or dtype, NaN or inf in
    them, no images; a 1-D, text or disagreeing target."""
    with np.load(io.BytesIO(data)) as z:
        arrays = {k: z[k] for k in z.files}
    images = arrays["images"]
    op = rng.choice(["shape", "dtype", "nan", "inf", "no-images", "target-1d", "target-text",
                     "target-other", "target-float", "frames"])  # fmt: skip
    if op == "shape":
        arrays["images"] = images[:, :40, :40]
    elif op == "frames":
        arrays["images"] = images[:-1]
    elif op == "dtype":
        arrays["images"] = images.astype(rng.choice(["U1", "complex64", "V8"]))
    elif op in ("nan", "inf"):
        f = images.astype(np.float32)
        f[0, 0, rng.randrange(80)] = np.nan if op == "nan" else np.inf
        arrays["images"] = f
    elif op == "no-images":
        del arrays["images"]
    elif op == "target-1d":
        arrays["target"] = np.array([int(arrays["target"]), 1])
    elif op == "target-text":
        arrays["target"] = np.array("two")
    elif op == "target-float":
        arrays["target"] = np.array(float(arrays["target"]) + 0.5)
    else:
        arrays["target"] = np.array((int(arrays["target"]) + 1) % 4, dtype=np.int64)
    return _npz(arrays)


def mutate_split(files: dict[str, bytes], rng: random.Random) -> dict[str, bytes]:
    """A split folder (relative path → bytes) with one file mutated as its kind allows."""
    files = dict(files)
    groups: dict[str, list[str]] = {}
    for n in sorted(files):  # each kind of file as likely as another: not 12 npz to 1 jsonl
        groups.setdefault(n.rsplit(".", 1)[-1] if "." in n else "", []).append(n)
    name = rng.choice(groups[rng.choice(sorted(groups))])
    data = files[name]
    if name.endswith(".npz"):
        files[name] = (
            mutate_npz_arrays(data, rng) if rng.random() < 0.4 else mutate_bytes(data, rng)
        )
    elif name.endswith(".jsonl"):
        lines = data.decode("utf-8").splitlines(keepends=True)
        k = rng.randrange(len(lines))
        if rng.random() < 0.6:
            lines[k] = dump_json(mutate_json_value(json.loads(lines[k]), rng), rng)
            lines[k] = lines[k].replace("\n", " ") + "\n"
        else:
            lines[k] = mutate_text(lines[k], rng)
        files[name] = encode("".join(lines), rng)
    elif name.endswith(".json"):
        files[name] = encode(mutate_json_text(data.decode("utf-8"), rng), rng)
    elif name.endswith(".csv"):
        files[name] = encode(mutate_csv(data.decode("utf-8"), rng), rng)
    elif rng.random() < 0.5:
        del files[name]
    else:
        files[name] = mutate_bytes(data, rng)
    return files


def read_tree(root: Path, skip: Callable[[str], bool] = lambda n: False) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not skip(str(p.relative_to(root)))
    }


def write_files(root: Path, files: dict[str, bytes]) -> None:
    if root.exists():
        shutil.rmtree(root)
    for name, data in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def sha256(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


# ---- real inputs --------------------------------------------------------------------------------
def ua_csv_path() -> Path:
    shared = Path(__file__).resolve().parents[3] / "shared" / "data" / "ua" / "annotations.csv"
    if shared.exists():
        return shared
    from studio.resources import ua_data_dir

    return ua_data_dir() / "annotations.csv"


def ua_sample_csv(n: int = 120) -> str:
    """Every ``len/n``-th row of the UA annotations (header kept): real rows of many concepts."""
    lines = ua_csv_path().read_text("utf-8").splitlines(keepends=True)
    body = lines[1:]
    step = max(1, len(body) // n)
    return lines[0] + "".join(body[::step][:n])


def ua_sample_tree(n: int = 60) -> list[str]:
    """The UA layout of a sample of the annotations, as relative file names."""
    from studio.core.annotations import file_name, folder_name, parse_annotation_csv
    from studio.core.schema import bundled_schema_path, load_schema

    rows = parse_annotation_csv(ua_sample_csv(n), load_schema(bundled_schema_path()))
    return [f"{folder_name(r.concept, r.value)}/{file_name(r.key)}" for r in rows]


# ---- outcomes -----------------------------------------------------------------------------------
@dataclass
class Outcome:
    """What one input did: ``accepted``, ``clean`` (a StudioError), ``traceback`` (any other
    exception: a bug), ``hang``; ``changed``: a project file changed although the input was
    refused."""

    kind: str
    message: str = ""
    changed: bool = False


def classify(run: Callable[[], bool]) -> Outcome:
    """Run one input; ``run`` returns whether a project file changed."""
    from studio.core.errors import StudioError

    try:
        run()
    except StudioError as e:
        return Outcome("clean", str(e)[:300], changed=_changed_after_error(e))
    except Hang:
        return Outcome("hang")
    except Exception as e:
        return Outcome("traceback", f"{type(e).__name__}: {e}"[:300])
    return Outcome("accepted")


class Hang(Exception):
    """Raised by the benchmark's per-input timer."""


def _changed_after_error(e: BaseException) -> bool:
    return bool(getattr(e, "_project_changed", False))


# ---- the loaders --------------------------------------------------------------------------------
@dataclass
class Loader:
    """One kind of input. ``prepare(work)`` makes what the loader needs once (a project,
    a split) and returns a context; ``make(ctx, rng)`` one mutated input; ``run(ctx, input,
    work)`` feeds it to the studio (StudioError = refused; it sets ``_project_changed`` on
    that error when a project file changed)."""

    name: str
    prepare: Callable[[Path], Any]
    make: Callable[[Any, random.Random], Any]
    run: Callable[[Any, Any, Path], None]
    save: Callable[[Any, Path], None] = field(default=lambda inp, path: None)


def _project_guard(project: Path, before: str | None, fn: Callable[[], None]) -> None:
    """Run ``fn``; when it raises StudioError, mark whether ``project`` changed."""
    from studio.core.errors import StudioError

    try:
        fn()
    except StudioError as e:
        e._project_changed = sha256(project) != before  # type: ignore[attr-defined]
        raise


# schema JSON (`init --schema`): the bundled UA schema, mutated; accepted schemas are made
# into a project as `init` would
def _schema_prepare(work: Path) -> Any:
    from studio.core.schema import bundled_schema_path

    return bundled_schema_path().read_text("utf-8")


def _schema_make(text: str, rng: random.Random) -> bytes:
    return encode(mutate_json_text(text, rng), rng)


def _schema_run(ctx: Any, data: bytes, work: Path) -> None:
    from studio.core.schema import load_schema
    from studio.store.project import Project

    path = work / "schema.json"
    path.write_bytes(data)
    project = work / "from-schema.studio"
    if project.exists():
        project.unlink()

    def init() -> None:
        schema = load_schema(path)
        Project.create(project, schema, author="fuzz").close()

    _project_guard(project, None, init)
    project.unlink()


def _save_bytes(data: bytes, path: Path) -> None:
    path.write_bytes(data)


# annotation CSV and UA folder imports: into a small real project (a sample of UA imported),
# copied fresh for every input; a refused import must leave the copy's bytes unchanged
@dataclass
class ImportContext:
    pristine: Path
    base: Any  # the seed input: CSV text or the folder's names
    catalog: Any


def _import_prepare(work: Path, base: Any) -> ImportContext:
    from studio.app import Studio
    from studio.core.schema import bundled_schema_path, load_schema
    from studio.glyphs.fonts import FontCatalog
    from studio.store.project import Project

    pristine = work / "pristine.studio"
    if pristine.exists():
        pristine.unlink()
    catalog = FontCatalog.scan()
    csv_path = work / "seed.csv"
    csv_path.write_text(ua_sample_csv(40), "utf-8")
    with Studio(
        Project.create(pristine, load_schema(bundled_schema_path()), author="fuzz"),
        catalog=catalog,
        author="fuzz",
    ) as studio:
        studio.import_annotations(csv_path)
    return ImportContext(pristine, base, catalog)


def _import_into(ctx: ImportContext, source: Path, work: Path) -> None:
    from studio.app import Studio
    from studio.store.project import Project

    project = work / "p.studio"
    shutil.copyfile(ctx.pristine, project)
    before = sha256(project)

    def do() -> None:
        with Studio(Project.open(project), catalog=ctx.catalog, author="fuzz") as studio:
            studio.import_annotations(source)

    _project_guard(project, before, do)


def _csv_run(ctx: ImportContext, data: bytes, work: Path) -> None:
    path = work / "tags.csv"
    path.write_bytes(data)
    _import_into(ctx, path, work)


def _folder_run(ctx: ImportContext, names: list[str], work: Path) -> None:
    root = work / "ua" / "Annotations"
    if root.parent.exists():
        shutil.rmtree(root.parent)
    root.mkdir(parents=True)
    write_tree(root, names)
    _import_into(ctx, root.parent, work)


def _save_names(names: list[str], path: Path) -> None:
    path.write_text(json.dumps(names, ensure_ascii=True, indent=1) + "\n", "utf-8")


# split folders (`vet`, `baseline`): a real generated split, one file mutated
def split_loader_run(ctx: dict[str, bytes], files: dict[str, bytes], work: Path) -> None:
    """Write the split and read it as ``vet`` does (verdicts and audit) and as ``baseline``
    does (arrays)."""
    from studio.baselines.data import load_source
    from studio.splits import audit_dir, vet_dir
    from studio.stimuli.split import is_stimulus_split, vet_stimulus_split

    folder = work / "split"
    write_files(folder, files)
    if is_stimulus_split(folder):
        vet_stimulus_split(folder)
    else:
        vet_dir(folder)
        audit_dir(folder)
    load_source(folder)


#: the stimulus families fuzzed (issue 25: their split folders were never fuzzed), with
#: options that keep a seed split small
#: small options for the built-in stimulus families; any other registered family (a plugin's)
#: is fuzzed with its defaults
STIMULUS_FUZZ = {
    "kiva": {"size": 96},
    "polycube-rotation": {"level": 2},
    "shape-composition": {"pieces": 3},
    "cube-net": {},
}


def stimulus_split_files(work: Path, family: str) -> dict[str, bytes]:
    """A real stimulus split of ``family`` (6 items), as relative path → bytes (the sheets,
    which neither reader opens, left out)."""
    from studio.stimuli.split import generate_stimulus_split

    out = work / f"seed-{family}"
    generate_stimulus_split(family, out, 6, seed=3, options=STIMULUS_FUZZ.get(family, {}))
    return read_tree(out, skip=lambda n: n.startswith("sheets/"))


def make_loaders(split_files: Callable[[Path], dict[str, bytes]] | None = None) -> list[Loader]:
    """The loader table. ``split_files(work)`` gives the seed split (a real generated one)."""
    out = [
        Loader("schema", _schema_prepare, _schema_make, _schema_run, _save_bytes),
        Loader(
            "csv",
            lambda w: _import_prepare(w, ua_sample_csv(120)),
            lambda ctx, rng: encode(mutate_csv(ctx.base, rng), rng),
            _csv_run,
            _save_bytes,
        ),
        Loader(
            "ua_folder",
            lambda w: _import_prepare(w, ua_sample_tree(30)),
            lambda ctx, rng: mutate_tree(ctx.base, rng),
            _folder_run,
            _save_names,
        ),
    ]
    if split_files is not None:
        out.append(
            Loader(
                "splitdir",
                split_files,
                lambda ctx, rng: mutate_split(ctx, rng),
                split_loader_run,
                lambda files, path: _save_split(files, path),
            )
        )
    from studio.stimuli.split import stimulus_families

    for family in stimulus_families():  # every registered family, plugins' too
        out.append(
            Loader(
                f"stimulus-{family}",
                lambda w, f=family: stimulus_split_files(w, f),
                lambda ctx, rng: mutate_split(ctx, rng),
                split_loader_run,
                lambda files, path: _save_split(files, path),
            )
        )
    from binary_loaders import binary_loaders  # fonts, meshes, project files

    out += binary_loaders()
    return out


def _save_split(files: dict[str, bytes], path: Path) -> None:
    write_files(path, files)
