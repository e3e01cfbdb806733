"""Registries: built-ins are found by id, lazily imported, and a plugin registers the same way."""

from __future__ import annotations

from pathlib import Path

import pytest

from studio.core.errors import StudioError
from studio.plugins import Registry, families, family, registry


def test_builtin_family_and_checks_are_registered() -> None:
    fam = registry("families")
    assert "glyph-pmp" in fam
    glyph = family("glyph-pmp")
    assert glyph.kind == "glyph" and "analogy" in glyph.option("layout").choices
    assert {f.id for f in families("stimulus")} >= {
        "kiva",
        "polycube-rotation",
        "shape-composition",
        "cube-net",
    }
    with pytest.raises(StudioError, match="no such family 'unicorn'"):
        family("unicorn")
    assert {"emergent-rules", "image-features"} <= set(registry("vet_checks").ids())


def test_unknown_and_duplicate_ids_are_clear_errors() -> None:
    reg = Registry("exporters")
    reg.register("sheet", "studio.core.puzzle:write_jsonl")
    with pytest.raises(StudioError, match="registered twice"):
        reg.register("sheet", object())
    with pytest.raises(StudioError, match="no exporters called 'nope'"):
        reg.get("nope")
    from studio.core.puzzle import write_jsonl

    assert reg.get("sheet") is write_jsonl


def test_built_in_families_are_found_from_their_folders() -> None:
    """Issue 27: no list of built-in families to keep in step — every package under
    studio/families is one, registered under its folder's name, its FAMILY's id the same."""
    from pathlib import Path

    import studio.families
    from studio.plugins import builtin_family_packages, family

    folders = sorted(
        d.name
        for d in Path(studio.families.__file__).parent.iterdir()
        if (d / "__init__.py").is_file()
    )
    assert builtin_family_packages() == folders
    assert {"glyph_pmp", "kiva", "polycube_rotation", "shape_composition", "cube_net"} <= set(
        folders
    )
    for package in folders:
        assert family(package.replace("_", "-")).id == package.replace("_", "-")


def test_a_family_registers_what_else_it_brings_from_its_own_folder() -> None:
    """KiVA's transformations and pixel checks come from its folder's ``plugin.register``, as
    a plugin's would; and no built-in family's id is spelled out in a module outside its own
    folder (issue 27), but for the glyph family's constant that the core defines."""
    import re
    from pathlib import Path

    import studio
    from studio.plugins import builtin_family_packages, registry

    transforms = registry("transforms")
    kiva = ("color", "size", "rotation", "reflection", "number")
    assert set(kiva) <= set(transforms.ids())
    assert all(transforms.meta(t)["family"] == "kiva" for t in kiva)
    assert {"kiva-ambiguity", "kiva-options"} <= set(registry("vet_checks").ids())

    root = Path(studio.__file__).parent
    ids = {p: p.replace("_", "-") for p in builtin_family_packages()}
    named: list[str] = []
    for path in root.rglob("*.py"):
        rel = path.relative_to(root)
        text = path.read_text(encoding="utf-8")
        for package, fid in ids.items():
            if rel.parts[:2] == ("families", package):
                continue
            for m in re.finditer(rf"[\"']{re.escape(fid)}[\"']", text):
                line = text[: m.start()].count("\n") + 1
                named.append(f"{rel}:{line}: {fid}")
    assert named == ["core/family.py:38: glyph-pmp"]  # GLYPH_FAMILY = "glyph-pmp"
    # nor does a front end, the export or the curation fall back on the glyph family by its
    # constant: they ask for the default family (the constant is the glyph family's id and
    # its split parameters' default, nothing more)
    using = sorted(
        str(path.relative_to(root))
        for path in root.rglob("*.py")
        if "GLYPH_FAMILY" in path.read_text(encoding="utf-8")
        and path.relative_to(root).parts[:2] != ("families", "glyph_pmp")
    )
    assert using == ["core/family.py", "generate/params.py"]


def test_the_default_family_is_a_definition_one_family_gives(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``generate`` without ``--family``, the Generate dialog's first choice and a set recorded
    before sets named their family all take the family that says it is the default; a
    plugin saying so too is refused in words naming both (issue 27)."""
    import dataclasses

    from studio.cli import _family_of, build_parser, main
    from studio.plugins import default_family

    assert default_family().id == "glyph-pmp"
    parser = build_parser()
    assert _family_of(parser.parse_args(["generate", "out"])).id == "glyph-pmp"
    assert _family_of(parser.parse_args(["needs", "p.studio"])).id == "glyph-pmp"
    assert _family_of(parser.parse_args(["generate", "--family", "kiva", "out"])).id == "kiva"
    families_reg = registry("families")
    monkeypatch.setitem(
        families_reg._entries,
        "lab-glyphs",
        dataclasses.replace(family("glyph-pmp"), id="lab-glyphs"),
    )
    with pytest.raises(StudioError, match="glyph-pmp, lab-glyphs"):
        default_family()
    # only a command that needs the default says so; the parser, and a command naming its
    # family, still work (review: the parser asked for the default while being built, so
    # every command failed, --help and gui included)
    parser = build_parser()
    assert _family_of(parser.parse_args(["generate", "--family", "kiva", "out"])).id == "kiva"
    assert main(["generate", str(tmp_path / "out")]) == 2
    assert "glyph-pmp, lab-glyphs" in capsys.readouterr().err


def test_a_failure_while_registering_leaves_no_half_filled_registries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A built-in or plugin that fails while the registries fill raises, and the next call
    tries again from empty — never a process that goes on with half the baselines."""
    import studio.plugins as plugins

    saved = {k: (dict(r._entries), dict(r._meta)) for k, r in plugins.REGISTRIES.items()}

    def broken(reg: dict[str, plugins.Registry]) -> None:
        reg["baselines"].register("half", "studio.baselines.trained:BlindBaseline")
        raise RuntimeError("a family's plugin module failed")

    try:
        for r in plugins.REGISTRIES.values():
            r._entries.clear()
            r._meta.clear()
        monkeypatch.setattr(plugins, "_loaded", False)
        monkeypatch.setattr(plugins, "_register_builtins", broken)
        for _ in range(2):  # and again: not a silent empty registry the second time
            with pytest.raises(RuntimeError, match="failed"):
                plugins.registry("baselines")
            assert not plugins._loaded
            assert all(not r._entries for r in plugins.REGISTRIES.values())
    finally:
        for k, (entries, meta) in saved.items():
            plugins.REGISTRIES[k]._entries.clear()
            plugins.REGISTRIES[k]._entries.update(entries)
            plugins.REGISTRIES[k]._meta.clear()
            plugins.REGISTRIES[k]._meta.update(meta)
        monkeypatch.undo()
    assert "blind" in plugins.registry("baselines")
