"""gzip and brotli for JSON, JSONP, HTML and the upstream's text and CSV bodies over 1 KB,
when the client accepts them."""

import gzip

import brotli
from flask import request

MINIMUM_SIZE = 1024
COMPRESSED_TYPES = (
    "application/json",
    "application/javascript",
    "text/html",
    "text/javascript",
    "text/plain",
)
# Levels chosen for speed: a page of productions compresses about ten-fold either way.
GZIP_LEVEL = 5
BROTLI_QUALITY = 4


def _encoding():
    """The encoding to answer in: brotli or gzip by the client's preference (brotli on a
    tie), or None."""
    accepted = request.accept_encodings
    best, best_quality = None, 0
    for name in ("br", "gzip"):
        quality = accepted.quality(name)
        if quality > best_quality:
            best, best_quality = name, quality
    return best


def encoded_tag(response, tag):
    """The ETag ``response`` will carry once compressed: ``tag`` with the encoding."""
    if len(response.get_data()) < MINIMUM_SIZE or response.mimetype not in COMPRESSED_TYPES:
        return tag
    encoding = _encoding()
    return f'{tag[:-1]}-{encoding}"' if encoding else tag


def compress(response):
    if (
        response.direct_passthrough
        or response.status_code < 200
        or response.status_code in (204, 304)
        or "Content-Encoding" in response.headers
        or response.mimetype not in COMPRESSED_TYPES
    ):
        return response
    body = response.get_data()
    if len(body) < MINIMUM_SIZE:
        return response
    response.vary.add("Accept-Encoding")
    encoding = _encoding()
    if encoding is None:
        return response
    if encoding == "br":
        response.set_data(brotli.compress(body, quality=BROTLI_QUALITY))
    else:
        response.set_data(gzip.compress(body, compresslevel=GZIP_LEVEL, mtime=0))
    response.headers["Content-Encoding"] = encoding
    tag = response.headers.get("ETag")
    if tag:
        response.headers["ETag"] = f'{tag[:-1]}-{encoding}"'
    return response
