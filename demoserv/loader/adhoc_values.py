"""The values of the upstream's ``/api/adhoc/`` answers, written as the upstream writes
them (UPSTREAM.md): its CSV cells as Python bytes literals, its dates, bylines and
download addresses, its JSON."""

import csv
import io
import json
import re
from urllib.parse import quote, unquote

from ..store.values import ADHOC_SITE_HOST, SECTIONS
from .link_classes import FORMATS, link_url

MONTHS = (
    "January February March April May June July August September October November December"
).split()
SCENE_ORG_VIEW = "https://files.scene.org/view"
SCENE_ORG_FTP = "ftp://ftp.scene.org/pub"
POUET_PARTY = re.compile(r"https://www\.pouet\.net/party\.php\?which=(.*)&when=(.*)", re.DOTALL)


def literal(text):
    """A text cell as the upstream's Python 3 writes ``text.encode("utf-8")``: its repr."""
    return repr(text.encode("utf-8"))


def site_literal(scheme, path):
    """The bytes literal of a page address on the site, its host to be put in when
    served (a bytes literal escapes a NUL, so the only one is the host's)."""
    return f"b'{scheme}://{ADHOC_SITE_HOST}{path}'"


def plain(text):
    """A cell the upstream writes as text (URLs): a NUL, which no export holds, as %00."""
    return text.replace(ADHOC_SITE_HOST, "%00")


def csv_body(header, rows):
    """The CSV (excel dialect: CRLF, minimal quoting) of ``header`` and ``rows`` of str."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue().encode("utf-8")


def json_body(items):
    """A JSON array as the upstream's ``json.dumps`` writes it (ASCII, ``", "``)."""
    return json.dumps(items).encode("ascii")


def byline(authors, affiliations):
    """Author nick names joined by `` + ``, then `` / `` and affiliations by `` ^ ``."""
    text = " + ".join(authors)
    return f"{text} / {' ^ '.join(affiliations)}" if affiliations else text


def long_date(partial):
    """A day- or month-precision date as klubi and scenesat write it (`` 3 October 2004``,
    ``June 2004``: strftime's ``%e %B %Y`` and ``%B %Y``)."""
    year, month = partial[:4], MONTHS[int(partial[5:7]) - 1]
    if len(partial) == 10:
        return f"{int(partial[8:]):2d} {month} {year}"
    return f"{month} {year}"


def page_path(supertype, production_id):
    return f"/{SECTIONS[supertype]}/{production_id}/"


def download_address(link_class, parameter, url):
    """Where a download link's file is fetched: scene.org's FTP form for its files (the
    parameter quoted as ISO-8859-1, else as UTF-8), else the link's URL."""
    if link_class != "SceneOrgFile" or parameter is None:
        return url
    try:
        encoded = parameter.encode("iso-8859-1")
    except UnicodeEncodeError:
        encoded = parameter.encode("utf-8")
    return SCENE_ORG_FTP + quote(encoded, safe="/")


def parameter_from_url(link_class, url):
    """A link's parameter read back from its URL by its class's format, or None where
    the URL is not of that form."""
    if link_class == "PouetParty":
        found = POUET_PARTY.fullmatch(url)
        parameter = found and f"{found[1]}/{found[2]}"
    elif link_class == "SceneOrgFile":
        found = url.startswith(SCENE_ORG_VIEW)
        parameter = found and unquote(url[len(SCENE_ORG_VIEW) :], encoding="iso-8859-1")
    else:
        form = FORMATS.get(link_class)
        if form is None:
            return None
        prefix, _, suffix = form.partition("{parameter}")
        found = url.startswith(prefix) and url.endswith(suffix)
        parameter = found and url[len(prefix) : len(url) - len(suffix)]
    try:
        return parameter if parameter and link_url(link_class, parameter) == url else None
    except ValueError:
        return None


def _reads(read):
    """Whether ``read`` takes a parameter (as the upstream reads it), as a function."""

    def reads(parameter):
        try:
            read(parameter)
        except (AttributeError, TypeError, ValueError):
            return False
        return True

    return reads


def numeric_id(parameter):
    """An id another site gives as a link's parameter, as the upstream reads it (``int``);
    ValueError when it is not one."""
    return int(parameter)


def pouet_party(parameter):
    """A ``PouetParty`` parameter ``<id>/<year>`` as (id, year); ValueError otherwise."""
    which, year = parameter.split("/")
    return int(which), int(year)


is_id = _reads(numeric_id)
is_pouet_party = _reads(pouet_party)
