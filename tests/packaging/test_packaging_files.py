"""The installer's files, checked without building anything (the build is `make package`, and
`packaging/smoke.sh` tests its result): the PyInstaller spec, the frozen entry script, the shell
scripts, the desktop entry and the icon."""

from __future__ import annotations

import ast
import configparser
import importlib.util
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGING = ROOT / "packaging"
SPEC = PACKAGING / "analogy-studio.spec"
LAUNCHER = PACKAGING / "launcher.py"
BUILD_SH = PACKAGING / "build.sh"
SMOKE_SH = PACKAGING / "smoke.sh"
DESKTOP = PACKAGING / "analogy-studio.desktop"
MIME_XML = PACKAGING / "analogy-studio-mime.xml"
MIME_TYPE = "application/x-analogy-studio-project"


def _assignment(tree: ast.Module, name: str) -> ast.expr:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            return node.value
    raise AssertionError(f"the spec assigns no {name}")


def _call(tree: ast.Module, func: str) -> ast.Call:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == func:
            return node
    raise AssertionError(f"the spec never calls {func}()")


def _keyword(call: ast.Call, name: str) -> ast.expr:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    raise AssertionError(f"{ast.unparse(call.func)}() has no {name}= argument")


# ---------------------------------------------------------------------------------- the spec


@pytest.fixture(scope="module")
def spec() -> ast.Module:
    return ast.parse(SPEC.read_text(encoding="utf-8"), filename=str(SPEC))


def test_spec_bundles_resources_and_schemas_at_the_bundle_root(spec: ast.Module) -> None:
    analysis = _call(spec, "Analysis")
    datas = _keyword(analysis, "datas")
    assert isinstance(datas, ast.Name), "Analysis(datas=...) should name the DATAS list"
    entries = _assignment(spec, datas.id)
    assert isinstance(entries, ast.List)
    pairs = {}
    for entry in entries.elts:
        assert isinstance(entry, ast.Tuple) and len(entry.elts) == 2
        source, dest = entry.elts
        assert isinstance(dest, ast.Constant)
        pairs[dest.value] = {c.value for c in ast.walk(source) if isinstance(c, ast.Constant)}
    # studio.resources.root() is sys._MEIPASS in a frozen app: the folders sit at its top,
    # copied from the folders of the same name in the repository.
    assert set(pairs) >= {"resources", "schemas"}
    for folder in ("resources", "schemas"):
        assert folder in pairs[folder], f"{folder} is bundled from {pairs[folder]}"
        assert (ROOT / folder).is_dir()


def test_spec_entry_script_and_exclusions(spec: ast.Module) -> None:
    scripts = _call(spec, "Analysis").args[0]
    assert "launcher.py" in ast.unparse(scripts)
    excludes = ast.literal_eval(_assignment(spec, "EXCLUDES"))
    for heavy in ("torchvision", "tkinter"):
        assert heavy in excludes
    # the 3D preview renders in the bundle and the baselines' worker trains there: their stacks
    # must not be excluded, and PyOpenGL's platform modules (chosen by name at run time) must
    # be named, as must matplotlib's back ends
    for needed in ("pyrender", "trimesh", "OpenGL", "scipy", "torch", "matplotlib"):
        assert needed not in excludes
    hidden = ast.unparse(_assignment(spec, "HIDDEN_IMPORTS"))
    assert "OpenGL.platform.egl" in hidden and "OpenGL.platform.osmesa" in hidden
    assert "matplotlib.backends.backend_qtagg" in hidden
    assert "collect_data_files('pyrender')" in ast.unparse(spec)
    keep = ast.literal_eval(_assignment(spec, "QT_KEEP"))
    drop = ast.literal_eval(_assignment(spec, "QT_DROP"))
    assert keep == {"QtCore", "QtGui", "QtWidgets"}
    assert {"QtWebEngineCore", "QtQml", "QtQuick", "Qt3DCore", "QtMultimedia"} <= set(drop)
    # The app's own Qt imports stay within QT_KEEP.
    used = {
        m
        for path in (ROOT / "studio").rglob("*.py")
        for m in re.findall(r"PySide6\.(Qt\w+)", path.read_text(encoding="utf-8"))
    }
    assert used <= keep, f"studio uses Qt modules the bundle leaves out: {used - keep}"
    # One folder: COLLECT, and the executable keeps the binaries outside.
    assert ast.literal_eval(_keyword(_call(spec, "EXE"), "exclude_binaries")) is True
    assert ast.literal_eval(_keyword(_call(spec, "COLLECT"), "name")) == "analogy-studio"


# ------------------------------------------------------------------------------ the launcher


def test_launcher_calls_freeze_support_before_importing_studio() -> None:
    tree = ast.parse(LAUNCHER.read_text(encoding="utf-8"), filename=str(LAUNCHER))
    freeze_at = first_studio_import = main_call = None
    # Statements in execution order: module level, then the `if __name__ == "__main__":` body.
    order: list[ast.stmt] = []
    for node in tree.body:
        order.append(node)
        if isinstance(node, ast.If):
            order.extend(node.body)
    for i, node in enumerate(order):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            names += [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if first_studio_import is None and any(n.split(".")[0] == "studio" for n in names):
                first_studio_import = i
        for call in ast.walk(node) if not isinstance(node, ast.If) else ():
            if isinstance(call, ast.Call):
                text = ast.unparse(call.func)
                if text == "multiprocessing.freeze_support" and freeze_at is None:
                    freeze_at = i
                if text == "main":
                    main_call = i
    assert freeze_at is not None, "launcher.py never calls multiprocessing.freeze_support()"
    assert first_studio_import is not None, "launcher.py never imports studio.cli"
    assert freeze_at < first_studio_import, "freeze_support() must run before studio is imported"
    assert main_call is not None and main_call > first_studio_import


# --------------------------------------------------------------------------- shell scripts


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
@pytest.mark.parametrize("script", [BUILD_SH, SMOKE_SH], ids=lambda p: p.name)
def test_shell_scripts_parse(script: Path) -> None:
    done = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_build_script_pins_pyinstaller_and_builds_the_deb() -> None:
    text = BUILD_SH.read_text(encoding="utf-8")
    assert re.search(r"^PYINSTALLER_VERSION=\d+\.\d+\.\d+$", text, re.M), "pin an exact version"
    assert "packaging/analogy-studio.spec" in text
    assert 'dpkg-deb --root-owner-group -Z"$DEB_COMPRESS"' in text
    assert "usr/share/applications/$NAME.desktop" in text
    assert "hicolor/256x256/apps/$NAME.png" in text
    depends = re.search(r"^DEPENDS=\((.*?)\)", text, re.M | re.S)
    assert depends is not None
    for package in ("libc6", "libegl1", "libgl1", "libxcb-cursor0", "fonts-symbola"):
        assert package in depends.group(1).split()


# --------------------------------------------------------------------------- desktop entry

# Keys of the Desktop Entry Specification 1.5 (group "Desktop Entry").
_KNOWN_KEYS = {
    "Type", "Version", "Name", "GenericName", "NoDisplay", "Comment", "Icon", "Hidden",
    "OnlyShowIn", "NotShowIn", "DBusActivatable", "TryExec", "Exec", "Path", "Terminal",
    "Actions", "MimeType", "Categories", "Implements", "Keywords", "StartupNotify",
    "StartupWMClass", "URL", "PrefersNonDefaultGPU", "SingleMainWindow",
}  # fmt: skip


def test_desktop_entry_has_the_required_keys() -> None:
    parser = configparser.ConfigParser(interpolation=None, strict=True)
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # keys are case-sensitive
    parser.read_string(DESKTOP.read_text(encoding="utf-8"))
    assert parser.sections() == ["Desktop Entry"]
    entry = parser["Desktop Entry"]
    unknown = {k for k in entry if k not in _KNOWN_KEYS and not k.startswith("X-")}
    assert not unknown, f"unknown keys {unknown}"
    assert entry["Type"] == "Application"
    assert entry["Name"] == "Analogy Studio"
    assert entry["Exec"] == "analogy-studio gui %f"  # a double-clicked .studio file opens
    assert entry["MimeType"] == f"{MIME_TYPE};"
    assert entry["Icon"] == "analogy-studio"  # a theme icon name, no path and no extension
    assert entry["Terminal"] == "false"
    for key in ("Categories", "Keywords"):
        assert entry[key].endswith(";"), f"{key} is a list and must end with ';'"
    if "Version" in entry:
        assert entry["Version"] in {"1.0", "1.1", "1.2", "1.3", "1.4", "1.5"}


def test_mime_type_claims_studio_files() -> None:
    import xml.etree.ElementTree as ET

    ns = {"m": "http://www.freedesktop.org/standards/shared-mime-info"}
    root = ET.fromstring(MIME_XML.read_text(encoding="utf-8"))
    [mime] = root.findall("m:mime-type", ns)
    assert mime.get("type") == MIME_TYPE
    assert [g.get("pattern") for g in mime.findall("m:glob", ns)] == ["*.studio"]
    assert mime.find("m:sub-class-of", ns).get("type") == "application/vnd.sqlite3"


# ------------------------------------------------------------------------------------- icon


def test_icon_is_a_256_px_png(tmp_path: Path) -> None:
    from PIL import Image

    loader = importlib.util.spec_from_file_location("make_icon", PACKAGING / "make_icon.py")
    assert loader is not None and loader.loader is not None
    make_icon = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(make_icon)
    out = tmp_path / "icon.png"
    assert make_icon.main([str(out)]) == 0
    with Image.open(out) as im:
        assert (im.format, im.size, im.mode) == ("PNG", (256, 256), "RGBA")
        assert im.getpixel((128, 128))[3] == 255  # opaque in the middle
        assert im.getpixel((0, 0))[3] == 0  # transparent corner (rounded square)


def test_launcher_dispatches_the_worker() -> None:
    """The studio starts its own executable as the baselines' worker process (frozen, there is
    no ``python -m``): the launcher must hand ``worker ...`` to studio.worker before the CLI."""
    text = (ROOT / "packaging" / "launcher.py").read_text(encoding="utf-8")
    ast.parse(text)
    assert "studio.worker.__main__" in text
    assert text.index("freeze_support()") < text.index("studio.worker.__main__")
    assert text.index("studio.worker.__main__") < text.index("from studio.cli import main")
