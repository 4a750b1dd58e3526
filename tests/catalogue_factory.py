"""Deterministic small catalogues for the tests, built to exercise the contract's edges:
names that start with punctuation, digits, accents and mixed case; titles with
articles, ``$``, digit runs and accents; partial, shared and unknown dates; nested
summaries that create records missing from their files; enough records to span pages.
"""

import json
import random
from pathlib import Path

NAME_PARTS = [
    "alpha",
    "Alpha",
    "BETA",
    "gamma",
    "Delta",
    "échelon",
    "Élan",
    "zeta",
    "omega",
    "Zulu",
    "2nd",
    "9lives",
    "10th",
    ".dot",
    "!bang",
    " space",
    "_under",
    "(paren)",
    "#hash",
    "ärger",
    "Östen",
    "mix Case",
    "x",
    "",
]
TITLE_PARTS = [
    "The End",
    "the beginning",
    "A Mind Is Born",
    "an apple",
    "Anarchy",
    "$tuff",
    "Ümlaut",
    "fr-08: .the .product",
    "2nd Reality",
    "10 print",
    "9 lives",
    "99 Bottles",
    "Élévation",
    "...and more",
    "State of the Art",
    "Rink a Dink",
    "Theme",
    "Aardvark",
    "  spaced   out  ",
    "X",
    "x",
    "Ärger",
    "the",
    "a",
    "Cube",
    "cube",
]
SUPERTYPES = {"production": [1, 4, 5, 6], "music": [14, 29], "graphics": [23, 36]}
TYPE_NAMES = {
    1: "Demo",
    4: "Intro",
    5: "Diskmag",
    6: "Tool",
    14: "Music",
    29: "Tracked Music",
    23: "Graphics",
    36: "Photo",
}


def _partial_date(rng, year_low=1985, year_high=2024):
    year = rng.randint(year_low, year_high)
    precision = rng.choice(["year", "month", "day", "day"])
    if precision == "year":
        return f"{year}"
    month = rng.randint(1, 12)
    if precision == "month":
        return f"{year}-{month:02d}"
    return f"{year}-{month:02d}-{rng.randint(1, 28):02d}"


def _name(rng, index):
    return f"{rng.choice(NAME_PARTS)}{rng.choice(['', ' ', '-'])}{index % 7}"


def build(
    seed=1, productions=260, parties=230, party_series=120, bbses=130, releasers=150, platforms=120
):
    """A catalogue as {resource: [file record, ...]}."""
    rng = random.Random(seed)
    cat = {}

    # Ids are shuffled and sparse, so id order differs from file order.
    def ids(count, start):
        values = list(range(start, start + count * 3, 3))
        rng.shuffle(values)
        return values

    cat["platforms"] = [{"id": i, "name": _name(rng, n)} for n, i in enumerate(ids(platforms, 1))]
    # Some types only appear nested in productions: the loader creates them.
    cat["production_types"] = [
        {"id": i, "name": TYPE_NAMES[i], "supertype": st}
        for st, type_ids in SUPERTYPES.items()
        for i in type_ids
        if i not in (29, 36)
    ]
    cat["releasers"] = [
        {"id": i, "name": _name(rng, n), "is_group": rng.random() < 0.4}
        for n, i in enumerate(ids(releasers, 5))
    ]
    cat["party_series"] = [
        {"id": i, "name": _name(rng, n), "website": rng.choice(["", f"https://party{n}.example/"])}
        for n, i in enumerate(ids(party_series, 2))
    ]
    series_ids = [s["id"] for s in cat["party_series"]]
    cat["parties"] = []
    for n, i in enumerate(ids(parties, 7)):
        online = rng.random() < 0.15
        start = _partial_date(rng)
        located = not online and rng.random() < 0.8
        cat["parties"].append(
            {
                "id": i,
                "name": _name(rng, n),
                "tagline": rng.choice(["", "Be there or be square", "ünïcode tagline"]),
                "start_date": start,
                "end_date": start if rng.random() < 0.5 else f"{int(start[:4]) + 1}",
                "location": rng.choice(["Helsinki, Finland", "Germany", "Saarbrücken"])
                if located
                else "",
                "is_online": online,
                "country_code": rng.choice(["FI", "DE", "SE", "NO", "PL", "HU"]) if located else "",
                "latitude": round(rng.uniform(-80, 80), 4) if located else None,
                "longitude": round(rng.uniform(-170, 170), 4) if located else None,
                "website": rng.choice(["", "https://example.org/"]),
                "party_series": rng.choice(series_ids + [None]),
            }
        )
    cat["bbses"] = []
    for n, i in enumerate(ids(bbses, 4)):
        located = rng.random() < 0.7
        cat["bbses"].append(
            {
                "id": i,
                "name": _name(rng, n // 2),  # names repeat, as they do upstream
                "location": rng.choice(["Oslo, Norway", "Finland", "Texas, USA"])
                if located
                else "",
                "latitude": round(rng.uniform(-80, 80), 5) if located else None,
                "longitude": round(rng.uniform(-170, 170), 5) if located else None,
                "tags": rng.sample(
                    ["world-hq", "euro-hq", "member-board", "distro"], rng.randint(0, 2)
                )
                + ([] if located else ["unknown-location"]),
            }
        )

    releaser_by_id = {r["id"]: r for r in cat["releasers"]}
    platform_by_id = {p["id"]: p for p in cat["platforms"]}
    shared_dates = ["1995", "1995-01-01", "1995-01", "2001-07-14"]
    cat["productions"] = []
    for n, i in enumerate(ids(productions, 3)):
        supertype = rng.choice(["production", "production", "music", "graphics"])

        def nick(rid=None):
            # Releasers 900000+ exist only as nested summaries.
            if rid is None and rng.random() < 0.05:
                rid = 900000 + rng.randint(0, 5)
                releaser = {"id": rid, "name": f"Summary Only {rid}", "is_group": rid % 2 == 0}
            else:
                releaser = releaser_by_id[rid or rng.choice(list(releaser_by_id))]
            credited = releaser["name"] if rng.random() < 0.8 else releaser["name"] + " (alias)"
            return {
                "name": credited,
                "abbreviation": rng.choice(["", "", credited[:3].upper()]),
                "releaser": dict(releaser),
            }

        date_roll = rng.random()
        if date_roll < 0.15:
            release_date = None
        elif date_roll < 0.35:
            release_date = rng.choice(shared_dates)
        else:
            release_date = _partial_date(rng)
        type_ids = rng.sample(SUPERTYPES[supertype], rng.randint(1, 2))
        cat["productions"].append(
            {
                "id": i,
                "title": f"{rng.choice(TITLE_PARTS)}{rng.choice(['', ' 2', ' II', ''])}",
                "author_nicks": [nick() for _ in range(rng.randint(0, 3))],
                "author_affiliation_nicks": [nick() for _ in range(rng.randint(0, 2))],
                "release_date": release_date,
                "supertype": supertype,
                "platforms": (
                    [
                        dict(platform_by_id[p])
                        for p in rng.sample(list(platform_by_id), rng.randint(0, 2))
                    ]
                    if supertype == "production"
                    else []
                ),
                "types": [
                    {"id": t, "name": TYPE_NAMES[t], "supertype": supertype} for t in type_ids
                ],
                "tags": rng.sample(
                    ["demo", "c64", "4k", "shader-showdown", "classic"], rng.randint(0, 3)
                ),
            }
        )
    return cat


def write(catalogue, folder):
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for resource, records in catalogue.items():
        with (folder / f"{resource}.jsonl").open("w", encoding="utf-8") as out:
            for record in records:
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
    return folder
