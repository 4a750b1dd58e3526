"""Catalogue files: loading (the only writer of the database), validating, exporting."""

from .export import export_catalogue
from .load import CatalogueError, Progress, load_catalogue

__all__ = ["CatalogueError", "Progress", "export_catalogue", "load_catalogue"]
