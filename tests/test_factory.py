"""create_app: configuration sources and first-run seeding."""

import os

from demoserv import DEFAULTS, build_from_seed, create_app

from . import catalogue_factory
from .conftest import suite_app


def test_defaults(monkeypatch, tmp_path):
    for name in list(os.environ):
        if name.startswith("DEMOSERV_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("DEMOSERV_SEED_DIR", "")
    # An empty instance folder: a developer's instance/config.py must not count.
    app = create_app(instance_path=str(tmp_path / "instance"))
    expected = {**DEFAULTS, "SEED_DIR": None, "DATABASE": app.config["DATABASE"]}
    assert {name: app.config[name] for name in DEFAULTS} == expected
    assert app.config["DATABASE"] == str(tmp_path / "instance" / "demoserv.sqlite3")
    assert app.config["SITE_URL"] == "https://demozoo.org"
    assert not app.testing


def test_instance_config_is_read(monkeypatch, tmp_path):
    monkeypatch.delenv("DEMOSERV_SITE_URL", raising=False)
    monkeypatch.setenv("DEMOSERV_SEED_DIR", "")
    (tmp_path / "config.py").write_text('SITE_URL = "https://instance.example"\n')
    app = create_app(instance_path=str(tmp_path))
    assert app.config["SITE_URL"] == "https://instance.example"


def test_environment_overrides_with_prefix(monkeypatch, tmp_path):
    monkeypatch.setenv("DEMOSERV_DATABASE", str(tmp_path / "x.sqlite3"))
    monkeypatch.setenv("DEMOSERV_SITE_URL", "https://mirror.example")
    monkeypatch.setenv("DEMOSERV_SEED_DIR", "")
    app = create_app(instance_path=str(tmp_path / "instance"))
    assert app.config["DATABASE"] == str(tmp_path / "x.sqlite3")
    assert app.config["SITE_URL"] == "https://mirror.example"


def test_test_config_replaces_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("DEMOSERV_SITE_URL", "https://ignored.example")
    app = create_app({"TESTING": True, "DATABASE": str(tmp_path / "t.sqlite3"), "SEED_DIR": ""})
    assert app.testing and app.config["SITE_URL"] == "https://demozoo.org"


def test_a_relative_database_is_taken_from_the_current_folder(tmp_path, monkeypatch):
    """One rule for the setting, the option and every command (db.resolve_database)."""
    from demoserv.web.db import database_path

    monkeypatch.chdir(tmp_path)
    app = create_app({"TESTING": True, "DATABASE": "rel.sqlite3", "SEED_DIR": ""})
    assert database_path(app) == tmp_path / "rel.sqlite3"
    monkeypatch.setenv("DEMOSERV_DATABASE", "env.sqlite3")
    monkeypatch.setenv("DEMOSERV_SEED_DIR", "")
    assert database_path(create_app(instance_path=str(tmp_path / "i"))) == tmp_path / "env.sqlite3"
    named = create_app(instance_path=str(tmp_path / "i"), database="option.sqlite3")
    assert database_path(named) == tmp_path / "option.sqlite3"
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")  # resolved once, when the app is made
    assert database_path(named) == tmp_path / "option.sqlite3"


def test_making_an_app_never_creates_its_database(tmp_path):
    seed = catalogue_factory.write(catalogue_factory.build(seed=4, productions=12), tmp_path / "s")
    create_app({"TESTING": True, "DATABASE": str(tmp_path / "typo.sqlite3"), "SEED_DIR": str(seed)})
    assert not (tmp_path / "typo.sqlite3").exists()


def test_a_server_builds_the_database_from_the_seed_once(tmp_path, caplog):
    seed = catalogue_factory.write(
        catalogue_factory.build(seed=4, productions=12), tmp_path / "seed"
    )
    database = tmp_path / "first.sqlite3"
    app = create_app({"TESTING": True, "DATABASE": str(database), "SEED_DIR": str(seed)})
    with caplog.at_level("INFO", logger="demoserv"):
        build_from_seed(app)
    assert database.exists()
    # The build in the server's log: each file read and each step, then what it holds.
    loaded = [r.getMessage() for r in caplog.records if r.name == "demoserv.loader"]
    assert any(line.startswith("read productions.jsonl (") for line in loaded)
    assert any(line.startswith("building records in ") for line in loaded)
    assert app.test_client().get("/api/v1/productions/").json["count"] == 12
    stamp = database.stat().st_mtime_ns
    build_from_seed(app)
    assert database.stat().st_mtime_ns == stamp
    other = catalogue_factory.write(
        catalogue_factory.build(seed=5, productions=7), tmp_path / "other"
    )
    build_from_seed(app, other)  # demoserv serve --catalogue: another source
    assert app.test_client().get("/api/v1/productions/").json["count"] == 7
    stamp = database.stat().st_mtime_ns
    build_from_seed(app, other)  # the same source: not loaded again
    assert database.stat().st_mtime_ns == stamp


def test_trusted_proxies(tmp_path, loaded_database):
    headers = {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "api.example"}
    trusting = suite_app(loaded_database, TRUSTED_PROXIES=1)
    body = trusting.test_client().get("/api/v1/", headers=headers).json
    assert body["platforms"] == "https://api.example/api/v1/platforms/"
    plain = suite_app(loaded_database)
    body = plain.test_client().get("/api/v1/", headers=headers).json
    assert body["platforms"] == "http://localhost/api/v1/platforms/"


def test_a_bad_setting_is_named_where_it_was_set(monkeypatch, tmp_path):
    import pytest

    from demoserv.settings import SettingError

    monkeypatch.delenv("DEMOSERV_TRUSTED_PROXIES", raising=False)
    monkeypatch.setenv("DEMOSERV_SEED_DIR", "")
    (tmp_path / "config.py").write_text('TRUSTED_PROXIES = "x"\n')
    with pytest.raises(SettingError, match=rf"^TRUSTED_PROXIES in {tmp_path}/config.py is 'x'"):
        create_app(instance_path=str(tmp_path))
    monkeypatch.setenv("DEMOSERV_TRUSTED_PROXIES", "-1")
    with pytest.raises(SettingError, match=r"^DEMOSERV_TRUSTED_PROXIES is -1: expected a whole"):
        create_app(instance_path=str(tmp_path))
    with pytest.raises(SettingError, match=r"^the CACHE_MAX_AGE setting is 'soon'"):
        create_app({"TESTING": True, "CACHE_MAX_AGE": "soon"})


def test_a_misspelt_variable_is_named_with_the_closest_setting(monkeypatch, caplog, tmp_path):
    monkeypatch.setenv("DEMOSERV_DATABSE", "x.sqlite3")
    monkeypatch.setenv("DEMOSERV_NOTHING_LIKE_IT", "1")
    monkeypatch.setenv("DEMOSERV_EXPORT_URL", "https://example.org/export.sql.gz")
    with caplog.at_level("WARNING"):
        create_app(instance_path=str(tmp_path))
    warned = [r.getMessage() for r in caplog.records if r.name == "demoserv.web.factory"]
    assert (
        "DEMOSERV_DATABSE is not a setting of demoserv, and is ignored: did you mean "
        "DEMOSERV_DATABASE?"
    ) in warned
    assert (
        "DEMOSERV_NOTHING_LIKE_IT is not a setting of demoserv, and is ignored (see demoserv "
        "settings)"
    ) in warned
    assert not [line for line in warned if "EXPORT_URL" in line]  # the update unit's


def test_only_a_named_database_that_does_not_exist_is_refused(monkeypatch, tmp_path):
    """The default database is built from the seed on a first start; one named by
    --database, DEMOSERV_DATABASE or DATABASE in config.py must exist, unless a
    catalogue is asked for (demoserv serve --catalogue)."""
    from demoserv.web.factory import missing_database

    monkeypatch.delenv("DEMOSERV_DATABASE", raising=False)
    instance = tmp_path / "instance"
    default = create_app(instance_path=str(instance))
    assert default.config["DATABASE_ORIGIN"] is None
    assert missing_database(default) is None
    assert not instance.exists()  # making an app makes nothing, its instance folder neither

    typo = tmp_path / "typo.sqlite3"
    named = create_app(instance_path=str(instance), database=str(typo))
    assert missing_database(named) == (
        f"{typo} does not exist (database from --database), and only the default database "
        f"is built from the seed: create it with demoserv load seed --database {typo} (or "
        "load another catalogue)"
    )
    assert missing_database(named, catalogue=tmp_path / "catalogue") is None
    typo.write_bytes(b"")
    assert missing_database(named) is None  # there: served (or answered 503 if unusable)

    instance.mkdir()
    (instance / "config.py").write_text(f"DATABASE = {str(tmp_path / 'other.sqlite3')!r}\n")
    configured = create_app(instance_path=str(instance))
    origin = f"DATABASE in {instance / 'config.py'}"
    assert configured.config["DATABASE_ORIGIN"] == origin
    assert f"(database from {origin})" in missing_database(configured)
    monkeypatch.setenv("DEMOSERV_DATABASE", str(tmp_path / "env.sqlite3"))
    from_environment = create_app(instance_path=str(instance))
    assert "(database from DEMOSERV_DATABASE)" in missing_database(from_environment)
