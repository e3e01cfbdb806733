"""Puzzle generators: each family registers here and writes the shared puzzle record."""
