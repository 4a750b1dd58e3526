"""WSGI entry point: ``waitress-serve wsgi:app`` or any WSGI server."""

from demoserv import create_app

app = create_app()
