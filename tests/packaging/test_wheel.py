"""The wheel is what a user installs: it must carry ``schemas/`` and ``resources/`` (pyproject's
package-dir maps them to ``studio._schemas`` and ``studio._resources``), declare every library
the studio imports, and run from any folder with no source tree in sight.

The slow test builds the wheel offline from a copy of the sources, installs it into a fresh
virtual environment whose dependencies are this venv's site-packages minus every editable
install (so neither the studio's editable finder nor the editable plugins leak in), and runs
the CLI from a folder outside the repository.
"""

from __future__ import annotations

import ast
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = ROOT / "pyproject.toml"
# pyproject's package-dir: the package each top-level data folder ships as
DATA_PACKAGES = {"studio._schemas": "schemas", "studio._resources": "resources"}
# what a wheel is built from (copied, so the build leaves nothing in the working tree)
SOURCES = ("pyproject.toml", "README.md", "MANIFEST.in", "studio", "schemas", "resources")


def _pyproject() -> dict:
    return tomllib.loads(PYPROJECT.read_text("utf-8"))


def _files(folder: Path) -> list[str]:
    """Every file under ``folder`` (relative, POSIX), less Python's byte-code caches."""
    return sorted(
        p.relative_to(folder).as_posix()
        for p in folder.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    )


def _normalised(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


# ------------------------------------------------------------------------ pyproject, no build


def test_pyproject_lists_every_studio_package_and_data_folder() -> None:
    """``packages`` is a list (``find`` cannot rename folders), so a new package or data folder
    left out of it would be missing from the wheel: compare it with the folders."""
    config = _pyproject()["tool"]["setuptools"]
    assert config["package-dir"] == DATA_PACKAGES
    code = {
        ".".join(d.relative_to(ROOT).parts)
        for d in [ROOT / "studio", *(ROOT / "studio").rglob("*")]
        if (d / "__init__.py").is_file() and "__pycache__" not in d.parts
    }
    data = set(DATA_PACKAGES)
    for package, folder in DATA_PACKAGES.items():
        assert (ROOT / folder / "__init__.py").is_file(), f"{folder}/ needs an __init__.py"
        data |= {
            ".".join((package, *d.relative_to(ROOT / folder).parts))
            for d in (ROOT / folder).rglob("*")
            if d.is_dir() and "__pycache__" not in d.parts
        }
    assert sorted(config["packages"]) == sorted(code | data)


def _guarded_by_import_error(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """An import inside ``try: ... except ImportError`` is optional, not a dependency."""
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.Try):
            for handler in node.handlers:
                names = [] if handler.type is None else [ast.unparse(handler.type)]
                if any("ImportError" in n or "ModuleNotFoundError" in n for n in names):
                    return True
    return False


def test_every_third_party_import_of_the_studio_is_a_declared_dependency() -> None:
    declared = {_normalised(Requirement(d).name) for d in _pyproject()["project"]["dependencies"]}
    providers = importlib.metadata.packages_distributions()
    undeclared: dict[str, set[str]] = {}
    for path in sorted((ROOT / "studio").rglob("*.py")):
        tree = ast.parse(path.read_text("utf-8"), filename=str(path))
        parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for top in {n.partition(".")[0] for n in names}:
                if top in sys.stdlib_module_names or top == "studio":
                    continue
                if _guarded_by_import_error(node, parents):
                    continue
                dists = providers.get(top, [top])
                if not any(_normalised(d) in declared for d in dists):
                    undeclared.setdefault(top, set()).add(str(path.relative_to(ROOT)))
    assert not undeclared, f"imported but not in [project].dependencies: {undeclared}"


# ------------------------------------------------------------------------ the wheel, installed


def _run(
    cmd: list[str | Path], cwd: Path, env: dict[str, str] | None = None, timeout: int = 240
) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert result.returncode == 0, (
        f"{' '.join(map(str, cmd))} exited {result.returncode}\n"
        f"--- stdout\n{result.stdout[-3000:]}\n--- stderr\n{result.stderr[-5000:]}"
    )
    return result


def _build_wheel(tmp: Path) -> Path:
    """``python -m build --wheel --no-isolation`` (the ``build`` front end pinned in
    requirements.lock; no index: this venv's setuptools) from a copy of the sources."""
    src = tmp / "src"
    src.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif (ROOT / name).is_file():
            shutil.copy2(ROOT / name, src / name)
    out = tmp / "wheels"
    built = _run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "-o", out, src], cwd=tmp
    )
    said = built.stdout + built.stderr
    assert "is deprecated" not in said, said[-3000:]  # e.g. project.license as a table
    (wheel,) = out.glob("analogy_studio-*.whl")
    return wheel


def _editable(dist_info: Path) -> bool:
    direct_url = dist_info / "direct_url.json"
    if not direct_url.is_file():
        return False
    return bool(json.loads(direct_url.read_text()).get("dir_info", {}).get("editable"))


def _dependencies_without_editable_installs(tmp: Path) -> Path:
    """A folder of links to this venv's site-packages, less the editable installs (the studio's
    and the plugins': their dist-info, finder modules and .pth files)."""
    deps = tmp / "deps"
    deps.mkdir()
    for site in {Path(sysconfig.get_paths()[k]) for k in ("purelib", "platlib")}:
        for entry in site.iterdir():
            if entry.name.startswith("__editable__") or entry.suffix == ".pth":
                continue
            if entry.suffix == ".dist-info" and _editable(entry):
                continue
            if not (deps / entry.name).exists():
                (deps / entry.name).symlink_to(entry)
    return deps


@pytest.mark.slow
def test_the_wheel_ships_the_data_and_runs_outside_the_repository(tmp_path: Path) -> None:
    wheel = _build_wheel(tmp_path)
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        metadata = z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    # the data, inside the package (and nothing at the wheel's top but studio and its metadata)
    for package, folder in DATA_PACKAGES.items():
        inside = package.replace(".", "/")
        missing = [f for f in _files(ROOT / folder) if f"{inside}/{f}" not in names]
        assert not missing, f"the wheel lacks {folder}/{missing}"
    assert {
        "studio/_schemas/concept-schema.schema.json",
        "studio/_schemas/ua-1.0.json",
        "studio/_resources/ua/annotations.csv",
        "studio/_resources/objects/duck.glb",
    } <= names
    assert {n.split("/")[0] for n in names} == {"studio", wheel.name.split("-py")[0] + ".dist-info"}
    missing_code = [f for f in _files(ROOT / "studio") if f"studio/{f}" not in names]
    assert not missing_code, f"the wheel lacks studio/{missing_code}"
    requires = {
        _normalised(Requirement(line.split(":", 1)[1]).name)
        for line in metadata.splitlines()
        if line.startswith("Requires-Dist:")
    }
    assert {"scipy", "psygnal", "pyopengl"} <= requires
    # the licence as an SPDX expression (PEP 639), not the table setuptools deprecates
    assert "License-Expression: MIT" in metadata.splitlines()

    # a clean venv: the wheel alone, its dependencies from this venv without the editable studio
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", venv], cwd=tmp_path)
    python = venv / "bin" / "python"
    site = Path(
        _run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            cwd=tmp_path,
        ).stdout.strip()
    )
    deps = _dependencies_without_editable_installs(tmp_path)
    (site / "_analogy_studio_test_deps.pth").write_text(f"{deps}\n")
    _run([python, "-m", "pip", "install", "--no-deps", "--no-index", "-q", wheel], cwd=tmp_path)

    run = tmp_path / "run"  # outside the repository
    run.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    env |= {
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "ANALOGY_STUDIO_SETTINGS": str(tmp_path / "settings.ini"),
        "ANALOGY_STUDIO_AUTHOR": "wheel-test",
        "QT_QPA_PLATFORM": "offscreen",
    }
    where = _run(
        [
            python,
            "-c",
            "import studio, studio.resources as r; "
            "print(studio.__file__, r.schemas_dir(), r.ua_data_dir(), sep='\\n')",
        ],
        cwd=run,
        env=env,
    ).stdout.split()
    assert len(where) == 3
    for path in map(Path, where):
        assert path.is_relative_to(site), f"{path} is not in the new venv"
    assert (Path(where[2]) / "annotations.csv").read_bytes() == (
        ROOT / "resources" / "ua" / "annotations.csv"
    ).read_bytes()

    demo = run / "demo.studio"
    _run([python, "-m", "studio", "demo", "--path", demo], cwd=run, env=env)
    assert demo.is_file()
    cli = venv / "bin" / "analogy-studio"
    _run([cli, "generate", "--family", "cube-net", run / "cube", "--n", "2"], cwd=run, env=env)
    assert any(p.suffix == ".png" for p in (run / "cube").rglob("*"))
    _run(
        [
            cli,
            "generate",
            demo,
            run / "glyph",
            "--family",
            "glyph-pmp",
            "--n",
            "20",
            "--sampling",
            "balanced",
            "--holdout",
            "none",
            "--seed",
            "1",
        ],
        cwd=run,
        env=env,
    )
    assert any(p.suffix == ".png" for p in (run / "glyph").rglob("*"))

    # the GUI on the demo project, offscreen: still running after a few seconds is a pass
    gui = subprocess.run(
        ["timeout", "6", str(cli), "gui", str(demo)],
        cwd=run,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert gui.returncode == 124 and "Traceback" not in gui.stderr, (
        f"the GUI exited {gui.returncode} before timeout stopped it\n"
        f"--- stdout\n{gui.stdout[-3000:]}\n--- stderr\n{gui.stderr[-5000:]}"
    )
