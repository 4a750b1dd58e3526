"""The history of changes kept at load (loader/history.py): successive loads of
catalogue folders and of upstream exports, each compared with the detail records that
the files themselves serve; an unchanged load, the history's retention, a file without
a history, a built file, and what status says."""

import gzip
import json
import shutil
import sqlite3
from pathlib import Path

import orjson
import pytest

from demoserv.loader import history, install, status_facts
from demoserv.loader.sources import LoadOptions, load_catalogue, load_source
from demoserv.resources import RESOURCES
from demoserv.store import facts
from demoserv.store.templates import RecordCodec

from .test_upstream import SAMPLE

SEED = Path(__file__).resolve().parent.parent / "seed"
UNTOUCHED = 142  # a production removed by the second load and restored by the third
ADDED = 999_999  # a production added by the second load and removed by the third


def records(folder, resource):
    path = folder / f"{resource}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def write(folder, resource, rows):
    path = folder / f"{resource}.jsonl"
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))


def rename(folder, old, new):
    """``old`` renamed ``new`` wherever a record or a nested summary names it."""
    for path in folder.glob("*.jsonl"):
        path.write_text(path.read_text().replace(f'"{old}"', f'"{new}"'))


def stages(root):
    """Four catalogue folders, each loaded in turn: the seed; a releaser renamed (its
    name shows in productions' credits), production UNTOUCHED removed and ADDED added;
    ADDED removed and UNTOUCHED restored as it was; every production but UNTOUCHED
    retitled."""
    folders = [root / f"stage{number}" for number in range(1, 5)]
    shutil.copytree(SEED, folders[0])
    shutil.copytree(folders[0], folders[1])
    rename(folders[1], "Future Crew", "Future Krew")
    productions = records(folders[1], "productions")
    untouched = next(row for row in productions if row["id"] == UNTOUCHED)
    added = {**productions[0], "id": ADDED, "title": "Added Then Removed"}
    kept = [row for row in productions if row["id"] != UNTOUCHED]
    write(folders[1], "productions", [*kept, added])
    shutil.copytree(folders[1], folders[2])
    write(folders[2], "productions", [*kept, untouched])
    shutil.copytree(folders[2], folders[3])
    write(
        folders[3],
        "productions",
        [
            row if row["id"] == UNTOUCHED else {**row, "title": row["title"] + " remastered"}
            for row in records(folders[2], "productions")
        ],
    )
    return folders


@pytest.fixture(scope="session")
def loads(tmp_path_factory):
    """(catalogue folders, a copy of the served file after each load, the versions), the
    four stages loaded in turn into one served file."""
    root = tmp_path_factory.mktemp("history")
    folders = stages(root)
    target = root / "served.sqlite3"
    files, versions = [], []
    for number, folder in enumerate(folders, 1):
        load_catalogue(folder, target)
        files.append(root / f"after{number}.sqlite3")
        shutil.copyfile(target, files[-1])
        versions.append(facts.version_and_time(target).version)
    return folders, files, versions


def detail_records(path):
    """{(resource, id): the detail record as the file serves it (as built)}."""
    connection = sqlite3.connect(path)
    try:
        codecs = {
            (resource, kind): RecordCodec(data)
            for resource, kind, data in connection.execute(
                "SELECT resource, kind, data FROM dictionaries"
            )
        }
        found = {}
        for resource in RESOURCES:
            details = resource.details_table
            table, kind = (resource.table, "list") if details is None else (details, "detail")
            codec = codecs[(resource.name, kind)]
            for record_id, doc in connection.execute(f"SELECT id, doc FROM {table.name}"):
                found[(resource.name, record_id)] = codec.marked(doc)
        return found
    finally:
        connection.close()


def expected_changes(old_path, new_path):
    """{(resource, id): change} of the records whose detail records differ."""
    old, new = detail_records(old_path), detail_records(new_path)
    changes = {key: "removed" for key in old.keys() - new.keys()}
    changes.update({key: "added" for key in new.keys() - old.keys()})
    changes.update({key: "changed" for key in old.keys() & new.keys() if old[key] != new[key]})
    return changes


def history_rows(path):
    connection = sqlite3.connect(path)
    try:
        loads = connection.execute(
            "SELECT load_number, version, loaded_at, counts FROM catalogue_loads "
            "ORDER BY load_number"
        ).fetchall()
        changes = connection.execute(
            "SELECT resource, id, load_number, digest_before, digest_after "
            "FROM catalogue_changes ORDER BY load_number, resource, id"
        ).fetchall()
        return loads, changes
    finally:
        connection.close()


def load_changes(path, number):
    """{(resource, id): change} that load ``number`` of the file at ``path`` recorded."""
    names = {(True, False): "added", (False, False): "changed", (False, True): "removed"}
    return {
        (resource, record_id): names[(before is None, after is None)]
        for resource, record_id, load, before, after in history_rows(path)[1]
        if load == number
    }


def counted(changes):
    counts = {}
    for (resource, _), change in sorted(changes.items()):
        each = counts.setdefault(resource, dict.fromkeys(history.CHANGES, 0))
        each[change] += 1
    return counts


def test_the_first_load_starts_the_history(loads):
    _, files, versions = loads
    loads_rows, changes = history_rows(files[0])
    assert [(row[0], row[1], row[3]) for row in loads_rows] == [(1, versions[0], "{}")]
    assert changes == []


def test_each_load_keeps_what_it_added_changed_and_removed(loads):
    _, files, versions = loads
    for number in (2, 3, 4):
        expected = expected_changes(files[number - 2], files[number - 1])
        assert load_changes(files[number - 1], number) == expected
        loads_rows, _ = history_rows(files[number - 1])
        assert [row[1] for row in loads_rows] == versions[:number]
        assert orjson.loads(loads_rows[-1][3]) == counted(expected)
    second = load_changes(files[1], 2)
    # A renamed releaser changes its own record and the records that show its name.
    assert second[("releasers", 357)] == "changed"
    assert second[("productions", 108)] == "changed"
    assert second[("productions", UNTOUCHED)] == "removed"
    assert second[("productions", ADDED)] == "added"
    third = load_changes(files[2], 3)
    assert third == {("productions", UNTOUCHED): "added", ("productions", ADDED): "removed"}


def test_the_history_is_carried_into_each_new_file(loads):
    _, files, _ = loads
    earlier = history_rows(files[2])
    later = history_rows(files[3])
    assert later[0][:3] == earlier[0]
    assert later[1][: len(earlier[1])] == earlier[1]


def test_an_unchanged_load_adds_nothing(loads, tmp_path):
    folders, files, _ = loads
    target = tmp_path / "served.sqlite3"
    shutil.copyfile(files[3], target)
    load_catalogue(folders[3], target)  # the same records again, loaded anyway
    assert history_rows(target) == history_rows(files[3])


def _age(path, numbers, when="2000-01-01T00:00:00Z"):
    """The loads ``numbers`` of the file at ``path`` made as old as ``when``."""
    connection = sqlite3.connect(path)
    with connection:
        connection.executemany(
            "UPDATE catalogue_loads SET loaded_at = ? WHERE load_number = ?",
            [(when, number) for number in numbers],
        )
    connection.close()


@pytest.mark.parametrize("keep_days, kept", [(90, [3, 4, 5]), (0, [4, 5])])
def test_the_history_keeps_the_loads_of_its_last_days(loads, tmp_path, keep_days, kept):
    folders, files, _ = loads
    target = tmp_path / "served.sqlite3"
    shutil.copyfile(files[3], target)
    _age(target, [1, 2])
    load_source(folders[2], target, LoadOptions(keep_days=keep_days))
    loads_rows, changes = history_rows(target)
    assert [row[0] for row in loads_rows] == kept
    assert {row[2] for row in changes} == set(kept) - {1}
    # The served file's last load is kept whatever its age.
    shutil.copyfile(target, tmp_path / "aged.sqlite3")
    _age(tmp_path / "aged.sqlite3", kept)
    load_source(folders[3], tmp_path / "aged.sqlite3", LoadOptions(keep_days=keep_days))
    assert [row[0] for row in history_rows(tmp_path / "aged.sqlite3")[0]] == [5, 6]


def test_a_file_without_a_history_starts_one(loads, tmp_path):
    folders, files, versions = loads
    target = tmp_path / "served.sqlite3"
    shutil.copyfile(files[0], target)
    connection = sqlite3.connect(target)
    connection.execute("DROP TABLE record_digests")
    connection.close()
    load_catalogue(folders[1], target)
    loads_rows, changes = history_rows(target)
    assert [(row[0], row[1], row[3]) for row in loads_rows] == [(1, versions[1], "{}")]
    assert changes == []


def feed_rows(path):
    """The feed's tables in the file at ``path`` (loader/feed.py), each in key order."""
    connection = sqlite3.connect(path)
    try:
        return {
            table: connection.execute(f"SELECT * FROM {table} ORDER BY 1, 2, 3").fetchall()
            for table in ("feed_changes", "feed_records", "feed_skips", "feed_spans")
        }
    finally:
        connection.close()


def test_a_load_over_a_file_without_the_feed_carries_its_history(loads, tmp_path):
    """A served file built before the feed's tables were keeps its history in the next
    file, whose feed is built from it."""
    folders, files, _ = loads
    target = tmp_path / "served.sqlite3"
    shutil.copyfile(files[2], target)
    connection = sqlite3.connect(target)
    for table in ("feed_changes", "feed_records", "feed_skips", "feed_spans"):
        connection.execute(f"DROP TABLE {table}")
    connection.execute("ALTER TABLE catalogue_info DROP COLUMN history")
    connection.commit()
    connection.close()
    load_catalogue(folders[3], target)
    loads_rows, changes = history_rows(target)
    expected_loads, expected_changes_rows = history_rows(files[3])
    assert [row[:2] for row in loads_rows] == [row[:2] for row in expected_loads]
    assert changes == expected_changes_rows
    assert feed_rows(target) == feed_rows(files[3])
    assert feed_rows(target)["feed_skips"], "records left out: added then removed, restored"


def test_a_built_file_keeps_its_own_history(loads, tmp_path):
    _, files, _ = loads
    target = tmp_path / "served.sqlite3"
    shutil.copyfile(files[0], target)
    load_catalogue(files[3], target)
    assert history_rows(target) == history_rows(files[3])


def test_a_rollback_serves_the_previous_file_with_its_history(loads, tmp_path):
    folders, files, _ = loads
    target = tmp_path / "served.sqlite3"
    shutil.copyfile(files[1], target)
    load_catalogue(folders[2], target)
    install.rollback(target)
    assert history_rows(target) == history_rows(files[1])


def _dump(path, text):
    path.write_bytes(gzip.compress(text.encode()))
    return path


def test_exports_with_a_renamed_releaser_and_an_edited_title(tmp_path):
    text = gzip.decompress(SAMPLE.read_bytes()).decode()
    edited = text.replace("\tHaujobb Mercury\t", "\tHaujobb Venus\t")
    edited = edited.replace("\n871\tAAA\t", "\n871\tAAA Remix\t", 1)
    assert "871\tAAA Remix\t" in edited and "3\tHaujobb Venus\t" in edited
    target = tmp_path / "served.sqlite3"
    load_catalogue(_dump(tmp_path / "before.sql.gz", text), target)
    shutil.copyfile(target, tmp_path / "before.sqlite3")
    load_catalogue(_dump(tmp_path / "after.sql.gz", edited), target)
    changes = load_changes(target, 2)
    assert changes == expected_changes(tmp_path / "before.sqlite3", target)
    assert changes[("releasers", 3)] == changes[("productions", 871)] == "changed"
    credited = [key for key in changes if key[0] == "productions" and key[1] != 871]
    assert credited, "the productions credited to the renamed nick changed too"
    assert set(changes.values()) == {"changed"}


def test_status_shows_the_last_load_and_how_far_back_the_history_goes(loads):
    _, files, versions = loads
    facts = status_facts.status(files[1])
    changes = facts["changes"]
    assert changes["last_load"]["version"] == versions[1]
    assert changes["last_load"]["counts"] == counted(expected_changes(files[0], files[1]))
    assert changes["since"]["version"] == versions[0]
    text = "\n".join(status_facts.lines(files[1], facts))
    assert "last changes:  productions +1 ~" in text
    assert f"history since: {changes['since']['loaded_at']} (version {versions[0]})" in text
    first = "\n".join(status_facts.lines(files[0], status_facts.status(files[0])))
    assert "last changes:  none: the history starts here" in first
