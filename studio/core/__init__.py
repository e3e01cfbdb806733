"""Qt-free, torch-free data model: schema, glyph keys, annotations."""
