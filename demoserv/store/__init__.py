"""The catalogue file's format, which the loader writes and the server reads: its tables
(``tables``), the stored record templates and their codec (``templates``), the values
both sides compute alike (``values``), the one reader of a file's facts (``facts``),
the built file's schema version (``fingerprint``), a file opened to be read only while
its path names it (``reading``), the address styles (``addresses``),
the compiled marshmallow dumpers (``serialize``) and the listing arrays
(``listing_arrays``).

The bottom layer: imports nothing of demoserv outside this package, and nothing of
Flask."""
