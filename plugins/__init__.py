"""Plugins shipped with the studio, written against the public plugin API (none yet)."""
