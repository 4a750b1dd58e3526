"""What a load reports, in order (loader/reporting.py): each file read as a stage,
then each step of the build; an export's tables as it is read; what the install does
not stop for. A download's stages and retries: tests/test_fetch.py."""

from demoserv.loader.reporting import FILE, STEP, StageAdvanced, StageFinished, StageStarted, Warned
from demoserv.loader.sources import load_catalogue

from .test_load import PRODUCTION, write_lines
from .test_upstream import SAMPLE

BUILD_STEPS = ["ranking", "indexing", "building records", "building the adhoc answers"]


def steps(names):
    return [
        event for name in names for event in (StageStarted(STEP, name), StageFinished(STEP, name))
    ]


def test_a_folder_reports_each_file_it_reads_then_each_step_of_the_build(tmp_path):
    source = tmp_path / "source"
    write_lines(source, "platforms", [{"id": 2, "name": "MS-Dos"}, {"id": 3, "name": "C64"}])
    write_lines(source, "productions", [PRODUCTION])
    events = []
    load_catalogue(source, tmp_path / "db.sqlite3", events.append)
    files = []
    for name, records in (("platforms.jsonl", 2), ("productions.jsonl", 1)):  # in load order
        size = (source / name).stat().st_size
        files += [
            StageStarted(FILE, name, size),
            StageAdvanced(size, records),  # the lines read since the last (here, all)
            StageFinished(FILE, name, records),
        ]
    assert events == files + steps(BUILD_STEPS)


def test_a_build_file_of_a_killed_load_removed_is_reported_first(tmp_path):
    source = tmp_path / "source"
    write_lines(source, "platforms", [{"id": 2, "name": "MS-Dos"}])
    database = tmp_path / "db.sqlite3"
    load_catalogue(source, database)
    leftover = tmp_path / ".db.sqlite3.0123abcd.loading"
    leftover.write_bytes(b"x" * 1500)
    events = []
    load_catalogue(source, database, events.append)
    assert events[0] == Warned(f"removed {leftover} (1,500 bytes) left by an interrupted load")
    assert events[1] == StageStarted(
        FILE, "platforms.jsonl", (source / "platforms.jsonl").stat().st_size
    )
    assert [event for event in events if isinstance(event, Warned)] == [events[0]]


def test_an_export_reports_its_tables_as_it_reads_them_then_its_steps(tmp_path):
    events = []
    load_catalogue(SAMPLE, tmp_path / "db.sqlite3", events.append)
    name, size = SAMPLE.name, SAMPLE.stat().st_size
    reading = events[: events.index(StageFinished(FILE, name)) + 1]
    assert reading[0] == StageStarted(FILE, name, size) and len(reading) > 3
    advanced = reading[1:-1]
    assert all(isinstance(event, StageAdvanced) and event.records == 0 for event in advanced)
    # Each table as it starts (0 rows), then its rows read so far.
    rows = [event.rows for event in advanced if event.table == "productions_production"]
    assert rows[0] == 0 and rows[-1] > 0 and rows == sorted(rows)
    assert 0 < sum(event.size for event in advanced) <= size  # the compressed bytes, each once
    assert events[len(reading) :] == steps(
        ["checking references", "deriving records", *BUILD_STEPS]
    )
