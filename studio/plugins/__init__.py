"""Plugin API: one registry per extensible kind; built-ins register like plugins."""
