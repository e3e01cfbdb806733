"""The shipped resources, the package ``studio._resources`` (pyproject's package-dir maps it to
this folder; ``ua/`` and ``objects/`` are its data sub-packages); read them through
``studio.resources.resources_dir()``."""
