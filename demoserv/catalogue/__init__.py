"""Catalogue files: loading (the only writer of the database), validating, exporting."""

from .export import export_catalogue
from .reporting import CatalogueError, Progress
from .sources import load_catalogue

__all__ = ["CatalogueError", "Progress", "export_catalogue", "load_catalogue"]
