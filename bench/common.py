"""What several benchmarks share: the UA annotations they build their projects from."""

from __future__ import annotations

from pathlib import Path

SHARED_UA_CSV = Path(__file__).resolve().parents[2] / "shared" / "data" / "ua" / "annotations.csv"


def ua_csv() -> Path:
    """The public UA annotation set: ../shared when present (as in CI), else the shipped copy."""
    if SHARED_UA_CSV.exists():
        return SHARED_UA_CSV
    from studio.resources import ua_data_dir

    return ua_data_dir() / "annotations.csv"
