"""Page numbers, slices and the page envelope: the only code that reads ``page`` or
builds ``next``/``previous``.

As in Django REST Framework: pages start at 1; an empty ``page`` is page 1 and
``page=last`` the last page; a repeated ``page`` takes its last value; anything else
that is not a page of the listing is ``404 {"detail": "Invalid page."}``; page 1 of an
empty listing is a valid empty page. Links keep every other query parameter and the
link to page 1 carries no ``page`` parameter; the query is rebuilt as the upstream's
Django REST framework rebuilds it (``rest_framework.utils.urls``): read as
``urllib.parse.parse_qs`` reads it (blank values kept, UTF-8, ``+`` a space), sorted by
name (a repeated name's values in their order) and written by ``urlencode`` with
``quote_plus`` (``id,title`` as ``id%2Ctitle``, a space as ``+``). The browsable HTML
page's paginator shows the page numbers Django REST framework's shows (``paginator``),
linked the same way.
"""

import re
from dataclasses import dataclass
from urllib.parse import parse_qs, quote, urlencode, urlsplit, urlunsplit

import orjson
from flask import request

from .error_handlers import APIError
from .negotiation import last_arg

_QUERY_SAFE = "!$&'()*+,/:;=?@%~"
_DIGITS = re.compile(r"[0-9]+")


@dataclass(frozen=True)
class Page:
    number: int
    count: int  # records in the whole listing
    size: int  # records per page (the whole listing for an unpaged one)

    @property
    def start(self):
        return (self.number - 1) * self.size

    @property
    def stop(self):
        return min(self.number * self.size, self.count)

    @property
    def last(self):
        return max(1, -(-self.count // self.size))


def current_page(count, size):
    """The page the request asks for in a listing of ``count`` records, ``size`` a page
    (the resource's ``page_size``; None: the listing is served whole in one page)."""
    size = size or max(count, 1)
    last = Page(1, count, size).last
    value = last_arg("page")
    if not value:
        number = 1
    elif value == "last":
        number = last
    # No listing has 10**18 pages; the length check also keeps int() cheap.
    elif _DIGITS.fullmatch(value) and len(value) <= 18 and 1 <= int(value) <= last:
        number = int(value)
    else:
        raise APIError(404, "Invalid page.")
    return Page(number, count, size)


def envelope_json(page, results):
    """The page as the API answers it, as JSON: count, next, previous, and ``results``
    (a JSON array, already encoded)."""
    request.page = page
    previous_url, next_url = neighbours(page, request_url())
    head = orjson.dumps({"count": page.count, "next": next_url, "previous": previous_url})
    return head[:-1] + b',"results":' + results + b"}"


def request_url(address=None):
    """``address`` (by default the request's absolute URL, without its query) with the
    query as the client sent it (request.url would re-encode it), made URL-safe."""
    query = quote(request.environ.get("QUERY_STRING", "").encode("latin-1"), safe=_QUERY_SAFE)
    return (address or request.address) + (f"?{query}" if query else "")


def neighbours(page, url, numbers=()):
    """The addresses of the pages before and after ``page`` of the listing at ``url``
    (None at either end), then those of the pages ``numbers``: its query read once."""
    before = page.number - 1 if page.number > 1 else None
    after = page.number + 1 if page.number < page.last else None
    wanted = [number for number in (before, after, *numbers) if number is not None]
    addresses = dict(zip(wanted, page_urls(url, wanted)))
    return addresses.get(before), addresses.get(after), *(addresses[n] for n in numbers)


def page_urls(url, numbers):
    """``url`` at each of the pages ``numbers`` (page 1 without ``page``), its query read
    once."""
    return with_values(url, "page", [None if number == 1 else number for number in numbers])


def replace_query_param(url, key, value):
    """``url`` with ``key`` set to ``value`` alone, its query rebuilt (``_rebuilt``)."""
    return with_values(url, key, [value])[0]


def remove_query_param(url, key):
    """``url`` without ``key``, its query rebuilt (``_rebuilt``)."""
    return with_values(url, key, [None])[0]


def with_values(url, key, values):
    """``url`` with ``key`` set to each of ``values`` alone in turn (None: without
    ``key``), its query read once and rebuilt each time as ``_rebuilt`` rebuilds it: the
    other names' part of it, sorted, is written once on either side of ``key``."""
    scheme, netloc, path, query, fragment = urlsplit(url)
    others = _parsed(query)
    others.pop(key, None)
    before = _rebuilt({name: value for name, value in others.items() if name < key})
    after = _rebuilt({name: value for name, value in others.items() if name > key})
    addresses = []
    for value in values:
        middle = "" if value is None else _rebuilt({key: [str(value)]})
        query = "&".join(part for part in (before, middle, after) if part)
        addresses.append(urlunsplit((scheme, netloc, path, query, fragment)))
    return addresses


def _parsed(query):
    """{name: [value, ...]} as Django REST framework reads a link's query: names and
    values decoded (``+`` a space; bytes that are not UTF-8 as U+FFFD), blank ones kept."""
    return parse_qs(query, keep_blank_values=True)


def _rebuilt(values):
    """The query of ``values`` as the upstream writes it: names sorted, every name and
    value through ``quote_plus`` (``,`` as ``%2C``, a space as ``+``, ``é`` as ``%C3%A9``)."""
    return urlencode(sorted(values.items()), doseq=True)


def page_numbers(current, final):
    """The page numbers Django REST framework's paginator shows on page ``current`` of
    ``final``: the first, the last, this page and its neighbours, or two of them beside
    the first or the last page, and None for a break (an ellipsis); every page for 5
    pages or fewer."""
    if final <= 5:
        return list(range(1, final + 1))
    included = {1, current - 1, current, current + 1, final}
    # A break that would leave out one number alone shows that number instead.
    if current <= 4:
        included.update((2, 3))
    if current >= final - 3:
        included.update((final - 1, final - 2))
    numbers = [number for number in sorted(included) if 0 < number <= final]
    if current > 4:
        numbers.insert(1, None)
    if current < final - 3:
        numbers.insert(len(numbers) - 1, None)
    return numbers


def paginator(page, url):
    """The paginator of ``page`` of the listing at ``url``, its addresses made from one
    reading of its query: ``page_links``, (number, its address, whether it is this
    page) for each of ``page_numbers``, None for a break; ``previous`` and ``next``,
    the neighbouring pages' addresses (None at either end)."""
    numbers = page_numbers(page.number, page.last)
    shown = [each for each in numbers if each is not None]
    previous, following, *addresses = neighbours(page, url, shown)
    linked = dict(zip(shown, addresses))
    return {
        "page_links": [
            None if each is None else (each, linked[each], each == page.number) for each in numbers
        ],
        "previous": previous,
        "next": following,
    }
