"""Picture transformations: the KiVA domains (colour, size, rotation, reflection, number) over a
symbolic picture state, rendered for 3D objects (pyrender) and 2D images (Pillow).

Core layer: no Qt, no torch. Importing this package is cheap: pyrender is loaded only when a
3D state is first rendered.
"""

from studio.transforms.kiva import (
    DOMAINS,
    KIVA_ADULTS_VALUES,
    KIVA_VALUES,
    MAX_COUNT,
    VALUES,
    StateRenderer,
    StimulusState,
    TransformSpec,
    apply,
    preview_pair,
    render_image_state,
    render_state,
    specs,
)

__all__ = [
    "DOMAINS",
    "KIVA_ADULTS_VALUES",
    "KIVA_VALUES",
    "MAX_COUNT",
    "VALUES",
    "StateRenderer",
    "StimulusState",
    "TransformSpec",
    "apply",
    "preview_pair",
    "render_image_state",
    "render_state",
    "specs",
]
