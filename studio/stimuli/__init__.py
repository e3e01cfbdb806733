"""Non-glyph stimuli: polyominoes and polycubes, the polycube-rotation, shape-composition and
cube-net tasks, and the record every such generator yields (:mod:`studio.stimuli.items`).

Core layer: no Qt, no torch. Rendering goes through Pillow (2D) or :mod:`studio.render3d`.
"""
