"""What a request may ask, without Flask: the error it is answered with (``error``), the
query parameters' descriptions (``parameters``), orderings (``ordering``) and filters
(``filters``), which the resource declarations use and the build reads.

May import ``store``; nothing of Flask."""
