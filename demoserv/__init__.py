"""demoserv: a read-only, paginated JSON API over a demoscene catalogue.

The app (``create_app``, ``serving_app`` and their settings) is in ``factory.py``, found
here on first use: the package itself imports nothing, so that the catalogue loader's
modules are imported without Flask (``demoserv serve``, ``flask --app demoserv`` and
``waitress-serve --call demoserv:serving_app`` find the app as before)."""

from .version import __version__

# The factory's names that the package answers for.
FROM_FACTORY = {
    "DEFAULTS",
    "SWITCH_INTERVAL",
    "build_from_seed",
    "create_app",
    "give_back_large_blocks",
    "serving_app",
}
__all__ = ["__version__", *sorted(FROM_FACTORY)]


def __getattr__(name):
    if name not in FROM_FACTORY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import factory

    return getattr(factory, name)
