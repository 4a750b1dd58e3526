"""demoserv: a read-only, paginated JSON API over a demoscene catalogue.

The package's face. The app's names (``create_app``, ``serving_app`` and their settings)
are in ``web/factory.py``, found here on first use: the package itself imports nothing,
so that the loader's modules are imported without Flask (``demoserv serve``, ``flask
--app demoserv`` and ``waitress-serve --call demoserv:serving_app`` find the app here).

The packages, from the bottom layer up (each imports only those before it):
``store`` (the catalogue file's format), ``api`` (what a request may ask),
``resources`` (one declaration per resource), ``loader`` (the only writer of catalogue
files), ``listings`` (the listings' read models), ``web`` (the application),
``server`` (waitress and the launcher), ``cli`` (the command line); beside them
``version``, ``byte_cache`` (the one cache class), ``settings`` and ``pytest_plugin``."""

from .version import __version__

# The factory's names that the package answers for.
FROM_FACTORY = {
    "DEFAULTS",
    "SWITCH_INTERVAL",
    "build_from_seed",
    "give_back_large_blocks",
    "serving_app",
}
__all__ = ["__version__", "create_app", *sorted(FROM_FACTORY)]


def create_app(*args, **settings):
    """The app of ``web.factory.create_app`` with the command line's commands added, so
    that ``flask --app demoserv load ...`` runs what ``demoserv load ...`` runs."""
    from .cli import commands
    from .web import factory

    app = factory.create_app(*args, **settings)
    commands.init_app(app)
    return app


def __getattr__(name):
    if name not in FROM_FACTORY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from .web import factory

    return getattr(factory, name)
