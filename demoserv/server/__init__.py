"""The HTTP server: waitress with demoserv's limits and JSON refusals (``serving``), and
the one launcher of a server process that waits for its ready line (``launcher``).

``serving`` may import ``web``'s request limits and ``api``; it serves the app it is
given and imports neither the factory nor ``cli``. ``launcher`` imports nothing of
demoserv."""
