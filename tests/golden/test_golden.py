"""Behaviour stays as it is: every family's split, and the annotation exports, byte for byte.

The digests in ``golden.json`` were written by ``python -m tests.golden.cases write`` before the
family refactor (issue 12); a change of output must be deliberate, re-recorded and said so.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.golden.cases import CASES, GOLDEN, PICTURES, make_project, run_case, run_exports, stack

RECORDED = json.loads(GOLDEN.read_text())


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory, ua_csv: Path) -> str:
    return make_project(tmp_path_factory.mktemp("golden"), ua_csv)


def _compare(name: str, got: dict[str, str], project: str) -> None:
    want = RECORDED["cases"][name]
    assert sorted(got) == sorted(want), f"{name}: the files written differ"
    same_stack = RECORDED["stack"] == stack(project)
    changed = [
        f for f in sorted(want) if got[f] != want[f] and (same_stack or not f.endswith(PICTURES))
    ]
    assert changed == [], f"{name}: {len(changed)} file(s) changed, e.g. {changed[:5]}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_split_is_byte_identical(name: str, project: str, tmp_path: Path) -> None:
    _compare(name, run_case(name, project, tmp_path / name), project)


def test_annotation_exports_are_byte_identical(project: str, tmp_path: Path) -> None:
    for name, got in run_exports(project, tmp_path):
        _compare(name, got, project)


def test_every_built_in_family_has_a_golden_case() -> None:
    """Plugins' families test their own bytes (plugins/*/tests)."""
    from studio.plugins import families

    def built_in(ref: object) -> bool:
        return str(getattr(ref, "__module__", ref)).startswith("studio.")

    covered = {args[args.index("--family") + 1] for _, args in CASES.values() if "--family" in args}
    covered.add("glyph-pmp")
    assert {f.id for f in families() if built_in(f.generator)} <= covered
