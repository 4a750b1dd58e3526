"""The listings' read models on the serving side: a served file's listing arrays read as
columns (``columns``), the listings found from them and kept (``kept``), and the guard
that finds a never-seen listing one at a time (``guard``).

May import ``store``, ``api`` and ``byte_cache``; of Flask only the app in use."""
