from __future__ import annotations

from pathlib import Path

from studio.demo import build_demo
from studio.store.project import Project


def test_demo_is_built_from_the_shipped_ua_data(tmp_path: Path) -> None:
    path = tmp_path / "demo.studio"
    stages = [s for s, _, _ in build_demo(path, blocks=["Geometric Shapes"])]
    assert stages[0] == "creating project" and stages[-1] == "ready"
    assert "rendering glyphs" in stages
    with Project.open(path) as p:
        assert p.tag_count() == 1512
        assert p.schema.id == "ua"
        statuses = {g.status for g in p.glyphs()}
    assert "pending" not in statuses and "ok" in statuses
    # a second call finds it ready and leaves it alone
    assert [s for s, _, _ in build_demo(path)] == ["ready"]


def test_cancelled_demo_leaves_no_project(tmp_path: Path) -> None:
    path = tmp_path / "demo.studio"
    gen = build_demo(path, blocks=["Geometric Shapes"])
    next(gen)
    next(gen)
    gen.close()
    assert not path.exists()
