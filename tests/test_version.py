"""One version, said in demoserv/version.py: the package metadata, demoserv-serve
--version, flask version and the OpenAPI document all give it."""

import importlib.metadata
import tomllib
from pathlib import Path

import pytest

from demoserv import __version__, create_app, serving
from demoserv.openapi import build

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def test_the_package_metadata_reads_the_version_module():
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    assert "version" in project["project"]["dynamic"]
    assert "version" not in project["project"]
    dynamic = project["tool"]["setuptools"]["dynamic"]["version"]
    assert dynamic == {"attr": "demoserv.version.__version__"}
    # The installed metadata (a reinstall updates it after the version changes).
    assert importlib.metadata.version("demoserv") == __version__


def test_demoserv_serve_version(capsys):
    with pytest.raises(SystemExit) as stopped:
        serving.main(["--version"])
    assert stopped.value.code == 0
    assert capsys.readouterr().out == f"demoserv {__version__}\n"


def test_flask_version_command(loaded_database):
    app = create_app({"TESTING": True, "DATABASE": str(loaded_database), "SEED_DIR": ""})
    result = app.test_cli_runner().invoke(args=["version"])
    assert result.exit_code == 0
    assert result.output == f"demoserv {__version__}\n"


def test_the_openapi_document_gives_the_version():
    assert build()["info"]["version"] == __version__
