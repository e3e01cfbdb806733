"""What KiVA registers besides its family, the way a plugin does (``register(registries)``,
found by :func:`studio.plugins.builtin_family_packages`' loader in this module): one
transformation per domain and the trial's two pixel checks. Kept here, so that no id of this
family is spelled out outside its folder (issue 27)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

DOMAINS = ("color", "size", "rotation", "reflection", "number")


def register(registries: Mapping[str, Any]) -> None:
    from studio.families.kiva import FAMILY

    for domain in DOMAINS:
        registries["transforms"].register(
            domain,
            f"studio.families.kiva.transforms:{domain.upper()}_TRANSFORM",
            family=FAMILY.id,
            description=f"KiVA {domain} transformation over a symbolic picture state",
        )
    registries["vet_checks"].register(
        "kiva-ambiguity",
        "studio.families.kiva.ambiguity:vet_transform",
        description="change visible; no other transformation draws the same after-picture",
    )
    registries["vet_checks"].register(
        "kiva-options",
        "studio.families.kiva.ambiguity:vet_options",
        description="no extrapolation distractor draws (nearly) the key's picture",
    )
