"""The stimulus families, one package each, and what a family is (:mod:`studio.core.family`).

Each package's ``__init__`` holds its :class:`~studio.core.family.Family` definition
(``FAMILY``) and imports nothing heavy; the generator, checks and readers it names live in the
package's modules. Families are registered once, in :mod:`studio.plugins` (plugins add their
own through the same registry), and looked up with :func:`studio.plugins.family`.
"""

from studio.core.family import Family, Option

__all__ = ["Family", "Option"]
