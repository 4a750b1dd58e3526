"""The sample catalogue in the package (sample/) is the service's own export of its import
of the upstream's sample export: made again here, it must be the same, byte for byte."""

from pathlib import Path

from .installed import run_installed

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_EXPORT = ROOT / "tests" / "data" / "upstream" / "demozoo-export-sample.sql.gz"


def test_the_sample_catalogue_is_up_to_date(tmp_path):
    # The two commands of sample/README.md.
    database = tmp_path / "sample.sqlite3"
    loaded = run_installed("demoserv", "load", "--database", database, SAMPLE_EXPORT)
    assert loaded.returncode == 0, loaded.stderr
    exported = run_installed("demoserv", "export", "--database", database, tmp_path / "sample")
    assert exported.returncode == 0, exported.stderr
    made = {path.name: path.read_bytes() for path in (tmp_path / "sample").iterdir()}
    shipped = {path.name: path.read_bytes() for path in (ROOT / "sample").glob("*.jsonl")}
    missing, stale = sorted(made.keys() - shipped.keys()), sorted(shipped.keys() - made.keys())
    assert not missing and not stale, (
        f"sample/ lacks {missing} and has {stale} the export no longer writes: "
        "make it again with the two commands of sample/README.md"
    )
    for name in made:
        assert made[name] == shipped[name], f"sample/{name} is out of date: see sample/README.md"


def test_the_sample_has_the_nested_records_a_client_parses():
    def text(name):
        return (ROOT / "sample" / f"{name}.jsonl").read_text(encoding="utf-8")

    for field in ("credits", "download_links", "external_links", "screenshots"):
        assert f'"{field}":[{{' in text("productions"), field
    assert '"member_of":[{' in text("releasers")
    assert '"competitions":[{' in text("parties") and '"releases":[1' in text("parties")
