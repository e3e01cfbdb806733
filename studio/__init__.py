"""Analogy Studio: author visual-analogy stimuli from schema-tagged Unicode glyphs."""

__version__ = "0.1.0"
