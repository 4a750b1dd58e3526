"""The listings' read models on the serving side: a served file's listing arrays read as
columns (``columns``), the finder process that finds listings from them (``finder``),
the listings found and kept (``kept``), and the guard that finds a never-seen listing one
at a time (``guard``).

May import ``store``, ``api``, ``resources`` and ``byte_cache``; of Flask only the app in
use."""
