"""The concept schemas, shipped as the package ``studio._schemas`` (pyproject's package-dir maps
it to this folder); read them through ``studio.resources.schemas_dir()``."""
