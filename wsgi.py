"""WSGI entry point: ``waitress-serve wsgi:app`` or any WSGI server."""

from demoserv import serving_app

app = serving_app()
