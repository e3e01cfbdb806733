"""What the non-glyph families share: polyominoes and polycubes and their geometry, the
record every stimulus generator yields (:mod:`.items`), the process pool that draws items
(:mod:`.loop`), contact and item sheets, the symbolic answer readers and their audit
(:mod:`.symbolic`) and the stimulus split folder (:mod:`.split`). The families themselves
(KiVA, polycube rotation, shape composition, cube nets) live in :mod:`studio.families`.

Core layer: no Qt, no torch. Rendering goes through Pillow (2D) or :mod:`studio.render3d`.
"""
