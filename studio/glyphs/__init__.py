"""Fonts (fontTools cmap coverage), Unicode names/blocks/scripts and glyph rendering (Pillow)."""
