"""Every record of every resource, list and detail, exactly as the contract shapes it."""

import pytest

from . import oracle
from .conftest import SITE_URL, module_client, walk

client = module_client()  # every test only reads

API = "http://localhost/api/v1/"
SECTION = {"production": "productions", "music": "music", "graphics": "graphics"}


def url(resource, record_id, suffix):
    return f"{API}{resource}/{record_id}/{suffix}"


def expected(resource, record, suffix=""):
    """The list record the contract gives for file record ``record``."""
    own_url = url(resource, record["id"], suffix)
    if resource == "platforms":
        return {"url": own_url, "id": record["id"], "name": record["name"]}
    if resource == "production_types":
        return {"url": own_url, **{k: record[k] for k in ("id", "name", "supertype")}}
    if resource == "releasers":
        return {"url": own_url, **{k: record[k] for k in ("id", "name", "is_group")}}
    if resource == "party_series":
        return {
            "url": own_url,
            "service_url": f"{SITE_URL}/parties/series/{record['id']}/",
            **{k: record[k] for k in ("id", "name", "website")},
        }
    if resource == "bbses":
        return {
            "url": own_url,
            "service_url": f"{SITE_URL}/bbs/{record['id']}/",
            **{k: record[k] for k in ("id", "name", "location", "latitude", "longitude", "tags")},
        }
    if resource == "parties":
        fields = (
            "id",
            "name",
            "tagline",
            "start_date",
            "end_date",
            "location",
            "is_online",
            "country_code",
            "latitude",
            "longitude",
            "website",
        )
        return {
            "url": own_url,
            "service_url": f"{SITE_URL}/parties/{record['id']}/",
            **{k: record[k] for k in fields},
        }

    def nick(n):
        releaser = n["releaser"]
        return {
            "name": n["name"],
            "abbreviation": n["abbreviation"],
            "releaser": expected("releasers", releaser, suffix),
        }

    return {
        "url": own_url,
        "service_url": f"{SITE_URL}/{SECTION[record['supertype']]}/{record['id']}/",
        "id": record["id"],
        "title": record["title"],
        "author_nicks": [nick(n) for n in record["author_nicks"]],
        "author_affiliation_nicks": [nick(n) for n in record["author_affiliation_nicks"]],
        "release_date": record["release_date"],
        "supertype": record["supertype"],
        "platforms": [expected("platforms", p, suffix) for p in record["platforms"]],
        "types": [expected("production_types", t, suffix) for t in record["types"]],
        "tags": record["tags"],
    }


def assert_same(actual, wanted):
    # Dict equality ignores key order: the contract fixes it, so compare it too.
    assert actual == wanted
    assert list(actual) == list(wanted)


@pytest.mark.parametrize("resource", list(oracle.KEYS))
@pytest.mark.parametrize("fmt", ["", "api", "json"])
def test_list_records(client, catalogue, resource, fmt):
    suffix = f"?format={fmt}" if fmt else ""
    pages = walk(client, f"/api/v1/{resource}/?ordering=id{'&format=' + fmt if fmt else ''}")
    got = [r for page in pages for r in page["results"]]
    wanted = sorted(oracle.all_records(catalogue, resource), key=lambda r: r["id"])
    assert len(got) == len(wanted)
    for actual, record in zip(got, wanted):
        assert_same(actual, expected(resource, record, suffix))
    if fmt:
        for page in pages:
            for link in (page["next"], page["previous"]):
                assert link is None or f"format={fmt}" in link


DETAIL_FIELDS = {
    "productions": "url service_url id title author_nicks author_affiliation_nicks release_date "
    "supertype platforms types credits download_links external_links release_parties "
    "competition_placings invitation_parties screenshots tags",
    "releasers": "url service_url id name is_group nicks member_of members subgroups "
    "external_links",
    "parties": "url service_url id name tagline party_series start_date end_date location "
    "is_online country_code latitude longitude website invitations releases competitions "
    "external_links",
    "party_series": "url service_url id name website parties",
    "bbses": "url service_url id name location country_code latitude longitude bbstros staff "
    "affiliations tags",
    "platforms": "url id name",
    "production_types": "url id name supertype",
}


@pytest.mark.parametrize("resource", list(oracle.KEYS))
def test_detail_records(client, catalogue, resource):
    """A detail record has the contract's detail fields in order; those it shares with
    the list record have the list record's values (nested lists: test_serialize)."""
    series = {s["id"]: s for s in catalogue["party_series"]}
    for record in oracle.all_records(catalogue, resource)[:40]:
        response = client.get(f"/api/v1/{resource}/{record['id']}/?format=api")
        assert response.status_code == 200
        assert list(response.json) == DETAIL_FIELDS[resource].split()
        wanted = expected(resource, record, "?format=api")
        if resource == "releasers":
            kind = "groups" if record["is_group"] else "sceners"
            wanted["service_url"] = f"{SITE_URL}/{kind}/{record['id']}/"
        if resource == "bbses":
            wanted["country_code"] = record.get("country_code", "")
        if resource == "parties":
            series_id = record.get("party_series")
            wanted["party_series"] = (
                expected("party_series", series[series_id], "?format=api") if series_id else None
            )
        assert_same({name: response.json[name] for name in wanted}, wanted)


def test_every_url_resolves(client):
    body = client.get("/api/v1/productions/?format=json").json
    urls = set()

    def collect(value):
        if isinstance(value, dict):
            for key, item in value.items():
                if key == "url":
                    urls.add(item)
                collect(item)
        elif isinstance(value, list):
            for item in value:
                collect(item)

    collect(body["results"])
    assert any("/releasers/" in u for u in urls) and any("/production_types/" in u for u in urls)
    assert all(u.endswith("/?format=json") for u in urls)
    for address in sorted(urls):
        assert client.get(address).status_code == 200, address


def test_root_lists_every_resource(client):
    body = client.get("/api/v1/").json
    assert body == {name: f"{API}{name}/" for name in oracle.KEYS}
    assert list(body) == [
        "party_series",
        "platforms",
        "bbses",
        "parties",
        "productions",
        "releasers",
        "production_types",
    ]
    body = client.get("/api/v1/?format=api").json
    assert all(address.endswith("/?format=api") for address in body.values())


def test_empty_text_and_null_coordinates(client, catalogue):
    online = next(p for p in catalogue["parties"] if p["is_online"])
    body = client.get(f"/api/v1/parties/{online['id']}/").json
    assert body["country_code"] == "" and body["location"] == ""
    assert body["latitude"] is None and body["longitude"] is None


def test_site_url_is_configuration(make_app, loaded_database):
    client = make_app(loaded_database, SITE_URL="https://mirror.example/").test_client()
    body = client.get("/api/v1/party_series/").json
    assert body["results"][0]["service_url"].startswith("https://mirror.example/parties/series/")
