"""``python -m demoserv``: the ``demoserv`` command."""

from .cli.commands import main

main()
