"""The stimulus families, one package each, and what a family is (:mod:`studio.core.family`).

Each package's ``__init__`` holds its :class:`~studio.core.family.Family` definition
(``FAMILY``) and imports nothing heavy; the generator, checks and readers it names live in the
package's modules. :mod:`studio.plugins` finds the packages here from their folders (a new
built-in family is its folder, plus a golden case), registers each lazily under its folder's
name (plugins add their own through the same registry) and :func:`studio.plugins.family`
looks them up.
"""

from studio.core.family import Family, Option

__all__ = ["Family", "Option"]
