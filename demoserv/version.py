"""The version of demoserv, said once: the package metadata (pyproject.toml reads it
here), ``demoserv-serve --version``, ``flask --app demoserv version`` and the OpenAPI
document's ``info.version`` all take it from this module."""

__version__ = "0.1.0"
