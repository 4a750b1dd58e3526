"""``python -m demoserv``: the ``demoserv`` command."""

from demoserv.cli import main

main()
