"""The views: every resource's answers (``resources``), the roots (``root``), status,
the changes feed, the OpenAPI document and docs page, and the upstream's ``/api/adhoc/``
paths. Each module registers its own routes on a blueprint the factory installs."""
