"""Properties of paging that must hold for any catalogue, checked with hypothesis over
generated catalogues: for every resource and every ordering,

- walking ``next`` from page 1 yields every record exactly once;
- the descending walk is the ascending walk reversed;
- ``count`` is the same on every page;
- page k holds exactly records n(k-1)+1 to nk of the full walk, n the resource's page size.

The suite checks 8 catalogues; ``pytest -m fuzz`` (run by .ci/run) 100.
"""

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from demoserv.loader.sources import load_catalogue
from demoserv.resources import BY_NAME

from . import oracle
from .conftest import SMALL_PAGE_SIZES, suite_app

# Few values, so that ties (equal names, titles, dates) are the rule, not the exception.
NAMES = st.sampled_from(["Alpha", "alpha", "BETA", "beta", ".dot", "2nd", "Élan", "", " x", "Zulu"])
TITLES = st.sampled_from(
    [
        "The End",
        "end",
        "A Mind Is Born",
        "$tuff",
        "stuff",
        "2 Lives",
        "10 Lives",
        "Élan",
        "elan",
        "?",
        "",
    ]
)
DATES = st.sampled_from([None, "1995", "1995-01", "1995-01-01", "2001-07", "2001-07-14", "1987"])
PARTY_DATES = DATES.filter(lambda d: d is not None)


@st.composite
def catalogues(draw):
    def ids(*sizes):
        size = draw(st.sampled_from(sizes))
        return draw(st.lists(st.integers(1, 10**6), unique=True, min_size=size, max_size=size))

    # Sizes at the edges of productions' pages: empty, one, either side of one and two.
    page = SMALL_PAGE_SIZES["productions"]
    edges = (0, 1, page - 1, page, page + 1, 2 * page, 2 * page + 1)
    releasers = [
        {"id": i, "name": draw(NAMES), "is_group": draw(st.booleans())} for i in ids(0, 3, 30)
    ]
    platforms = [{"id": i, "name": draw(NAMES)} for i in ids(0, 1, 8)]
    productions = []
    for i in ids(*edges):
        supertype = draw(st.sampled_from(["production", "music", "graphics"]))
        productions.append(
            {
                "id": i,
                "title": draw(TITLES),
                "author_nicks": [
                    {"name": r["name"], "abbreviation": "", "releaser": r}
                    for r in draw(st.lists(st.sampled_from(releasers), max_size=2))
                ]
                if releasers
                else [],
                "author_affiliation_nicks": [],
                "release_date": draw(DATES),
                "supertype": supertype,
                "platforms": draw(
                    st.lists(st.sampled_from(platforms), max_size=1, unique_by=lambda p: p["id"])
                )
                if platforms
                else [],
                "types": [
                    {
                        "id": {"production": 1, "music": 14, "graphics": 23}[supertype],
                        "name": supertype.title(),
                        "supertype": supertype,
                    }
                ],
                "tags": [],
            }
        )
    parties = []
    for i in ids(*edges):
        start = draw(PARTY_DATES)
        parties.append(
            {
                "id": i,
                "name": draw(NAMES),
                "tagline": "",
                "start_date": start,
                "end_date": draw(PARTY_DATES),
                "location": "",
                "is_online": False,
                "country_code": draw(st.sampled_from(["", "FI", "DE", "NO"])),
                "latitude": None,
                "longitude": None,
                "website": "",
                "party_series": None,
            }
        )
    bbses = [
        {
            "id": i,
            "name": draw(NAMES),
            "location": "",
            "latitude": None,
            "longitude": None,
            "tags": [],
        }
        for i in ids(*edges)
    ]
    series = [{"id": i, "name": draw(NAMES), "website": ""} for i in ids(*edges)]
    return {
        "platforms": platforms,
        "releasers": releasers,
        "party_series": series,
        "parties": parties,
        "bbses": bbses,
        "productions": productions,
    }


def walk_ids(client, path):
    pages, url = [], path
    while url:
        assert len(pages) < 50
        body = client.get(url).json
        pages.append(body)
        url = body["next"]
    return pages


def check_paging(catalogue):
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        (folder / "files").mkdir()
        for resource, records in catalogue.items():
            with (folder / "files" / f"{resource}.jsonl").open("w", encoding="utf-8") as out:
                out.writelines(json.dumps(r) + "\n" for r in records)
        load_catalogue(folder / "files", folder / "db.sqlite3")
        client = suite_app(folder / "db.sqlite3").test_client()
        for resource, keys in oracle.KEYS.items():
            everything = oracle.all_records(catalogue, resource)
            for key in keys:
                ascending = walk_ids(client, f"/api/v1/{resource}/?ordering={key}")
                descending = walk_ids(client, f"/api/v1/{resource}/?ordering=-{key}")
                up = [r["id"] for page in ascending for r in page["results"]]
                down = [r["id"] for page in descending for r in page["results"]]
                assert sorted(up) == sorted(r["id"] for r in everything)  # each exactly once
                assert len(set(up)) == len(up)
                assert down == up[::-1]
                assert {page["count"] for page in ascending + descending} == {len(everything)}
                assert up == [r["id"] for r in oracle.ordered(resource, everything, key)]
                size = SMALL_PAGE_SIZES.get(resource, BY_NAME[resource].page_size)
                if size is not None:
                    for number in range(1, len(ascending) + 1):
                        page = client.get(f"/api/v1/{resource}/?ordering={key}&page={number}").json
                        assert [r["id"] for r in page["results"]] == up[
                            size * (number - 1) : size * number
                        ]


def paging_test(examples):
    """``check_paging`` over ``examples`` generated catalogues, the same ones each run."""
    return settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )(given(catalogue=catalogues())(check_paging))


test_paging_properties = paging_test(8)  # in the suite: each catalogue is loaded and walked
test_paging_properties_long = pytest.mark.fuzz(paging_test(100))  # with -m fuzz, by .ci/run
