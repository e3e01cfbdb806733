"""Persistence: one project is one SQLite database file (SQLAlchemy 2)."""
