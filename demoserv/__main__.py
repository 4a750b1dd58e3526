"""``python -m demoserv``: the ``demoserv`` command."""

from .cli import main

main()
