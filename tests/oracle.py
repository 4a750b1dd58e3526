"""What the contract says a listing holds, computed from the catalogue files alone.

Written from CONTRACT.md independently of the service's code, so that the tests compare
the service against the contract and not against itself.
"""

import functools
import re
import unicodedata
from urllib.parse import parse_qsl, quote_plus

KEYS = {
    "party_series": ["id", "name"],
    "platforms": ["id", "name"],
    "bbses": ["id", "name"],
    "parties": ["id", "name", "start_date_date", "end_date_date", "country_code"],
    "productions": ["id", "sortable_title", "release_date_date", "supertype"],
    "releasers": ["id", "name"],
    "production_types": ["id", "name"],
}
DEFAULT = {"productions": "sortable_title"}


def expected_sortable_title(title):
    text = "".join(
        c for c in unicodedata.normalize("NFD", title) if unicodedata.category(c) != "Mn"
    )
    text = text.replace("$", "s")
    text = "".join(" " if unicodedata.category(c).startswith("P") else c for c in text)
    text = " ".join(text.split()).lower()
    text = re.sub(r"[0-9]+", lambda m: "0" * (9 - len(m.group())) + m.group(), text)
    match = re.match(r"(the|a|an) (.*)", text)
    return f"{match.group(2)} {match.group(1)}" if match else text


def name_rank(name):
    first = name[:1]
    group = 1 if first.isdecimal() else 2 if first.isalpha() else 0
    return (group, name.lower())


def first_day(partial):
    if partial is None:
        return None
    parts = partial.split("-") + ["01", "01"]
    return "-".join(parts[:3])


def sort_value(resource, key, record):
    if key == "id":
        return record["id"]
    if key == "name":
        return name_rank(record["name"])
    if key == "sortable_title":
        return expected_sortable_title(record["title"])
    if key == "release_date_date":
        return first_day(record["release_date"])
    if key == "start_date_date":
        return first_day(record["start_date"])
    if key == "end_date_date":
        return first_day(record["end_date"])
    return record[key]  # country_code, supertype


def _compare_values(a, b):
    # None sorts after every value (ascending).
    if a is None or b is None:
        return (a is None) - (b is None)
    return (a > b) - (a < b)


def ordered(resource, records, ordering=None):
    """``records`` in the order ``ordering`` (the parameter's value) asks for."""
    terms = []
    for term in (ordering or DEFAULT.get(resource, "name")).split(","):
        term = term.strip()
        terms.append((term.lstrip("-"), term.startswith("-")))
    terms.append(("id", terms[0][1]))

    def compare(x, y):
        for key, descending in terms:
            result = _compare_values(sort_value(resource, key, x), sort_value(resource, key, y))
            if result:
                return -result if descending else result
        return 0

    return sorted(records, key=functools.cmp_to_key(compare))


def all_records(catalogue, resource):
    """Every record of ``resource``, including those created from nested summaries."""
    records = {r["id"]: r for r in catalogue.get(resource, [])}
    if resource in ("releasers", "platforms", "production_types"):
        for production in catalogue.get("productions", []):
            if resource == "releasers":
                summaries = [
                    nick["releaser"]
                    for nick in production["author_nicks"] + production["author_affiliation_nicks"]
                ]
            else:
                summaries = production["platforms" if resource == "platforms" else "types"]
            for summary in summaries:
                records.setdefault(summary["id"], summary)
    return list(records.values())


def upstream_link(url, page):
    """The upstream's link to ``page`` of the listing asked at ``url``, as Django REST
    framework writes it (``rest_framework/utils/urls.py``): the query read by
    ``parse_qs`` (blank values kept), ``page`` replaced (none for page 1), names sorted,
    each name's values in their order, every name and value through ``quote_plus``."""
    base, _, query = url.partition("?")
    values = {}
    for name, value in parse_qsl(query, keep_blank_values=True):
        values.setdefault(name, []).append(value)
    values.pop("page", None)
    if page > 1:
        values["page"] = [str(page)]
    pairs = [
        f"{quote_plus(name)}={quote_plus(value)}"
        for name in sorted(values)
        for value in values[name]
    ]
    return base + ("?" + "&".join(pairs) if pairs else "")
