"""The web application: the factory (``factory``), the served file (``db``), the request
pipeline (``pipeline``) and its stages — limits, negotiation, conditional requests,
compression, kept answers, the access log, the error handlers — the request's address
style and pagination, and the views (``views``).

May import every package below it (``store``, ``api``, ``resources``, ``loader``,
``listings``) and ``settings``; never ``server`` or ``cli``."""
