"""Catalogue files: loading (the only writer of the database), validating, exporting.
Start at ``sources.load_catalogue`` (every kind of source) and ``export.export_catalogue``.
Nothing here imports Flask but the command line (``cli.py``), and this package's own
module imports nothing, so that the server can read a file's facts (``status.py``,
``install.py``) without importing the loader."""
