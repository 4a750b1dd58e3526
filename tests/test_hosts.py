"""Host names and catalogue versions, as replicas behind a cache need them: trusted
hosts match in any case, url fields carry the host as the client sent it (punycode
stays punycode), and every answer names its catalogue version, the same for the same
records whichever load built the file."""

import shutil
import sqlite3

from demoserv.loader.sources import load_catalogue


def test_trusted_hosts_match_in_any_case(make_app, loaded_database):
    client = make_app(loaded_database, TRUSTED_HOSTS=["api.example.org"]).test_client()
    response = client.get("/api/v1/", headers={"Host": "API.Example.ORG"})
    assert response.status_code == 200
    assert response.json["productions"] == "http://API.Example.ORG/api/v1/productions/"
    refused = client.get("/api/v1/", headers={"Host": "other.example.org"})
    assert refused.status_code == 400 and "host" in refused.json["detail"].lower()


def test_punycode_hosts_stay_punycode(client):
    host = "xn--bcher-kva.example"
    page = client.get("/api/v1/productions/?page=2", headers={"Host": host}).json
    assert page["results"][0]["url"].startswith(f"http://{host}/api/v1/productions/")
    assert page["next"].startswith(f"http://{host}/api/v1/productions/?page=3")
    assert page["previous"] == f"http://{host}/api/v1/productions/"
    root = client.get("/api/v1/", headers={"Host": host}).json
    assert root["parties"] == f"http://{host}/api/v1/parties/"


def test_every_answer_names_the_catalogue_version(client):
    for path in ("/api/v1/", "/api/v1/platforms/", "/api/v1/productions/?title=x"):
        response = client.get(path)
        assert len(response.headers["X-Catalogue-Version"]) == 32
    tag = client.get("/api/v1/platforms/").headers["ETag"]
    revalidated = client.get("/api/v1/platforms/", headers={"If-None-Match": tag})
    assert revalidated.status_code == 304 and "X-Catalogue-Version" in revalidated.headers


def test_replicas_of_the_same_records_agree(make_app, catalogue_dir, loaded_database, tmp_path):
    replica = tmp_path / "replica.sqlite3"
    load_catalogue(catalogue_dir, replica)  # another load, another file, the same records
    first = make_app(loaded_database).test_client()
    second = make_app(replica).test_client()
    for path in ("/api/v1/productions/?page=2", "/api/v1/parties/", "/api/v1/releasers/"):
        one, two = first.get(path), second.get(path)
        assert one.headers["ETag"] == two.headers["ETag"]
        assert one.headers["X-Catalogue-Version"] == two.headers["X-Catalogue-Version"]
        assert one.data == two.data
    copy = tmp_path / "copy.sqlite3"
    shutil.copy(replica, copy)
    tag = first.get("/api/v1/parties/").headers["ETag"]
    third = make_app(copy).test_client()
    assert third.get("/api/v1/parties/", headers={"If-None-Match": tag}).status_code == 304


def test_reloading_the_same_records_changes_no_answer(make_app, catalogue_dir, tmp_path):
    served = tmp_path / "served.sqlite3"
    load_catalogue(catalogue_dir, served)
    app = make_app(served)
    first = app.test_client().get("/api/v1/parties/")
    with sqlite3.connect(served) as connection:  # as if the first load were long ago
        connection.execute("UPDATE catalogue_info SET loaded_at = '2001-02-03T04:05:06Z'")
    connection.close()
    load_catalogue(catalogue_dir, served)  # the same records again
    again = make_app(served).test_client().get("/api/v1/parties/")
    assert again.headers["ETag"] == first.headers["ETag"]
    assert again.headers["Last-Modified"] == "Sat, 03 Feb 2001 04:05:06 GMT"
    since = {"If-Modified-Since": again.headers["Last-Modified"]}
    assert make_app(served).test_client().get("/api/v1/parties/", headers=since).status_code == 304
