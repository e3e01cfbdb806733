from __future__ import annotations

import pytest

from studio.render3d import Renderer


@pytest.fixture(scope="module")
def renderer():
    with Renderer(96) as r:
        yield r
