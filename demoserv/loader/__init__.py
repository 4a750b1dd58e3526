"""The catalogue loader, the only writer of catalogue files: sources, download, the
upstream export's reader, validation, the build, install and rollback, history, the
``/api/adhoc/`` answers' build, export, and the record schemas only it uses. Start at
``sources.load_catalogue`` (every kind of source) and ``export.export_catalogue``.

May import ``store``, ``api`` and ``resources``; never Flask, ``web``, ``listings``,
``server`` or ``cli``. This package's own module imports nothing, so that the server can
use ``status_facts`` and ``install`` without importing the builder; a file's facts
themselves are read by ``store.facts``."""
