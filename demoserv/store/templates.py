"""The stored-template format of records, which the catalogue build writes and the server
reads (neither side's modules are imported here).

Records are built once, at load, with markers in place of what depends on the request
or the configuration (``MARKERS``): ``\\x00A`` the API root, ``\\x00F`` the end of an
address (its trailing slash and ``?format=`` suffix, or a format suffix in its place:
``/``, ``/?format=json``, ``.json``), ``\\x00S`` the site URL. A catalogue never holds a
NUL character in its text, so a marker cannot be data. Records are stored as templates in
which each marker, and the name of the page-address field, is a key of bytes
%-formatting (``to_template``), compressed (``RecordCodec``); ``resolver`` puts a
request's values, and the field name that ``SERVICE_URL_FIELD`` asks for, in their place
in one pass.
"""

import threading
from dataclasses import astuple, dataclass

import orjson
import zstandard


@dataclass(frozen=True)
class LinkStyle:
    """What the addresses of records are built from (``addresses.api_url``, ``site_url``)."""

    api_root: str  # ends with "/"
    suffix: str  # what ends an address: "/", "/?format=..." or ".json" in place of the "/"
    site: str  # no trailing "/"


MARKERS = LinkStyle("\x00A", "\x00F", "\x00S")


def _escaped(text):
    return orjson.dumps(text)[1:-1]


# zstd's level for records: past 3, a fifth smaller for twice the time (still well under
# the time to build a record); expanding is as fast.
LEVEL = 5
# The dictionary trainer's segment and d-mer sizes, fixed: left to search, zstd tries
# dozens of pairs, which costs 2 to 5 times as long and made a full catalogue's records
# 0.5% larger in all (bench/dictionaries.py, bench/RESULTS.md).
COVER = {"k": 1024, "d": 8}


# Records are built with the address markers (MARKERS) and stored as templates of bytes
# %-formatting: each marker becomes a mapping key (%(A)b, %(F)b, %(S)b), the name of the
# page-address field %(N)b, and every other % is doubled. Putting a request's addresses
# and field name in is then one pass in C (``template % values``), where replacing each
# marker in turn took several passes over the page.
TEMPLATE_KEYS = tuple(
    (_escaped(marker), key) for marker, key in zip(astuple(MARKERS), (b"A", b"F", b"S"))
)
SERVICE_URL_KEY = b'"service_url":'  # only a key can be followed by '":' unescaped
# The values that turn a template back into the record as built, markers and all.
MARKED = {key: marker for marker, key in TEMPLATE_KEYS} | {b"N": b"service_url"}


def to_template(doc):
    """The stored form of the record JSON ``doc`` (built with address markers)."""
    if b"\\\\" in doc:
        # An escaped backslash followed by "u0000A" is text, not a marker: escapes pair
        # from the left, as split does.
        return b"\\\\".join(to_template(part) for part in doc.split(b"\\\\"))
    doc = doc.replace(b"%", b"%%")
    for marker, key in TEMPLATE_KEYS:
        doc = doc.replace(marker, b"%(" + key + b")b")
    return doc.replace(SERVICE_URL_KEY, b'"%(N)b":')


class RecordCodec:
    """How records are stored: templates (``to_template``) compressed by zstd with a
    dictionary trained on the first records of a resource (list or detail), which share
    most of their keys and addresses, so that each compresses six to eight times and
    expands in a few microseconds. Contexts are per thread: zstd's are not safe to share
    between threads."""

    def __init__(self, dictionary):
        self.dictionary = dictionary
        self._data = zstandard.ZstdCompressionDict(dictionary) if dictionary else None
        self._local = threading.local()

    @classmethod
    def trained(cls, samples, size):
        """A codec whose dictionary is trained on the records ``samples`` (bytes, as
        built), or made of their content where they fit in it or are too few to train on."""
        samples = [to_template(sample) for sample in samples]
        content = b"".join(samples)
        if len(content) <= size:  # every sample whole in the dictionary: none trains better
            return cls(content)
        try:
            dictionary = zstandard.train_dictionary(size, samples, **COVER).as_bytes()
        except zstandard.ZstdError:
            dictionary = content[:size]
        return cls(dictionary)

    def _contexts(self):
        contexts = getattr(self._local, "contexts", None)
        if contexts is None:
            contexts = self._local.contexts = (
                zstandard.ZstdCompressor(level=LEVEL, dict_data=self._data),
                zstandard.ZstdDecompressor(dict_data=self._data),
            )
        return contexts

    def compress(self, doc):
        """The stored form of the record ``doc`` (JSON as built, with markers)."""
        return self._contexts()[0].compress(to_template(doc))

    def expand(self, data):
        """The template of a stored record, for ``resolver``."""
        return self._contexts()[1].decompress(data)

    def marked(self, data):
        """A stored record as it was built, with its markers."""
        return self.expand(data) % MARKED


def resolver(style, service_url_field="service_url"):
    """A function that turns stored record templates (a record as built with MARKERS:
    ``to_template``), or several joined, into ``style``'s JSON."""
    values = {
        b"A": _escaped(style.api_root),
        b"F": _escaped(style.suffix),
        b"S": _escaped(style.site),
        b"N": _escaped(service_url_field),
    }

    def resolve(body):
        return body % values

    return resolve


_LINE_SEPARATOR = "\u2028".encode()
_PARAGRAPH_SEPARATOR = "\u2029".encode()


def escape_line_separators(body):
    """``body`` with U+2028 and U+2029 written ``\\u2028`` and ``\\u2029``, as the
    upstream's framework writes them: JavaScript engines before ES2019 end a line at
    either, so a JSONP script holding them raw does not run. In JSON they can stand only
    inside strings, where the escape means the same character."""
    if _LINE_SEPARATOR not in body and _PARAGRAPH_SEPARATOR not in body:
        return body  # the usual case: one scan each, no copy
    return body.replace(_LINE_SEPARATOR, b"\\u2028").replace(_PARAGRAPH_SEPARATOR, b"\\u2029")
