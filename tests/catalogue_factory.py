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
    "Øresund",
    "ÑANDÚ",
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
    "Fjørd $hift",
    "Ça va",
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


# The first records of every named resource start so, whatever the seed: with
# punctuation, a digit and a letter (name order), and with the accented letters the
# search tests look for.
PLACED_NAME_PARTS = [".dot", "2nd", "Alpha", "Élan", "ÑANDÚ", "Øresund"]


def _name(rng, n, index=None):
    """The name of a resource's ``n``th record, ending in ``index`` (``n``) modulo 7."""
    part = PLACED_NAME_PARTS[n] if n < len(PLACED_NAME_PARTS) else rng.choice(NAME_PARTS)
    return f"{part}{rng.choice(['', ' ', '-'])}{(n if index is None else index) % 7}"


def build(
    seed=1, productions=28, parties=25, party_series=13, bbses=14, releasers=40, platforms=120
):
    """A catalogue as {resource: [file record, ...]}. The default sizes span two or three
    pages at the suite's small page sizes (``conftest.SMALL_PAGE_SIZES``); platforms,
    served in one page whatever their number, are more than a page of the default size."""
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
        # About 40% groups, one in three at least: subgroups pair twelve of them.
        {"id": i, "name": _name(rng, n), "is_group": n % 3 == 0 or rng.random() < 0.1}
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
        country = rng.choice(["FI", "DE", "SE", "NO", "PL", "HU"]) if located else ""
        if n < 3:  # whatever the seed: in Finland before 2000, in Germany since, online
            online, located, country = n == 2, n < 2, ["FI", "DE", ""][n]
            start = _partial_date(rng, *[(1985, 1999), (2000, 2024), (1995, 2020)][n])
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
                "country_code": country,
                "latitude": round(rng.uniform(-80, 80), 4) if located else None,
                "longitude": round(rng.uniform(-170, 170), 4) if located else None,
                "website": rng.choice(["", "https://example.org/"]),
                "party_series": rng.choice(series_ids + [None]),
            }
        )
    cat["bbses"] = []
    for n, i in enumerate(ids(bbses, 4)):
        located = n != 0 and rng.random() < 0.7  # the first has no known location
        cat["bbses"].append(
            {
                "id": i,
                "name": _name(rng, n, n // 2),  # names repeat, as they do upstream
                "location": rng.choice(["Oslo, Norway", "Finland", "Texas, USA"])
                if located
                else "",
                "latitude": round(rng.uniform(-80, 80), 5) if located else None,
                "longitude": round(rng.uniform(-170, 170), 5) if located else None,
                "tags": (
                    ["distro", "world-hq"]  # the pair the tag tests look for
                    if n == 1
                    else rng.sample(
                        ["world-hq", "euro-hq", "member-board", "distro"], rng.randint(0, 2)
                    )
                )
                + ([] if located else ["unknown-location"]),
            }
        )

    releaser_by_id = {r["id"]: r for r in cat["releasers"]}
    platform_by_id = {p["id"]: p for p in cat["platforms"]}
    shared_dates = ["1995", "1995-01-01", "1995-01", "2001-07-14"]
    cat["productions"] = []
    for n, i in enumerate(ids(productions, 3)):
        # Half are productions, so that a supertype filter spans pages.
        supertype = ["production", "music", "production", "graphics"][n % 4]

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
                # One abbreviation per nick, as upstream: a nick is one record.
                "abbreviation": credited[:3].upper() if len(credited) % 3 == 0 else "",
                "releaser": dict(releaser),
            }

        date_roll = rng.random()
        if n < len(shared_dates):  # every form of one day, at shuffled ids
            release_date = shared_dates[n]
        elif n == len(shared_dates) + 1:  # one before all of them
            release_date = _partial_date(rng, 1985, 1994)
        elif n == len(shared_dates) or date_roll < 0.15:
            release_date = None
        elif date_roll < 0.35:
            release_date = rng.choice(shared_dates)
        else:
            release_date = _partial_date(rng)
        type_ids = rng.sample(SUPERTYPES[supertype], rng.randint(1, 2))
        cat["productions"].append(
            {
                "id": i,
                "title": "The End"  # the title the filter tests look for, whatever the seed
                if n == 0
                else f"{rng.choice(TITLE_PARTS)}{rng.choice(['', ' 2', ' II', ''])}",
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
                "tags": ["demo", "c64"]  # the tags the filter tests look for
                if n == 0
                else rng.sample(
                    ["demo", "c64", "4k", "shader-showdown", "classic"], rng.randint(0, 3)
                ),
            }
        )
    _enrich(cat, rng)
    return cat


def _timestamp(rng):
    return (
        f"{rng.randint(2005, 2025)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d} 12:00:00+00"
    )


def _link(rng, n):
    return rng.choice(
        [
            {"link_class": "BaseUrl", "url": f"https://site{n}.example/"},
            {"link_class": "PouetProduction", "url": f"https://www.pouet.net/prod.php?which={n}"},
            {"link_class": "YoutubeVideo", "url": f"https://www.youtube.com/watch?v=v{n}"},
        ]
    )


def _enrich(cat, rng):
    """Detail fields of every kind: credits, links, screenshots, party releases and
    invitations, competitions with results, memberships, BBS staff; each relation given
    on one side, so that the loader derives the other."""
    releasers = cat["releasers"]
    groups = [r for r in releasers if r["is_group"]]
    productions = cat["productions"]
    for n, record in enumerate(releasers):
        record["external_links"] = [_link(rng, n) for _ in range(rng.randint(0, 2))]
        record["country_code"] = rng.choice([None, "FI", "DE"])
        record["created_at"] = _timestamp(rng)
        record["updated_at"] = _timestamp(rng)
        if not record["is_group"] and groups:
            record["member_of"] = [
                {"group": {"id": group["id"]}, "is_current": rng.random() < 0.5}
                for group in rng.sample(groups, rng.randint(0, min(2, len(groups))))
            ]
    # Subgroups: a few groups are members of others.
    for group, parent in zip(groups[:6], groups[6:12]):
        group["member_of"] = [{"group": parent["id"], "is_current": True}]
    released = set()
    competition_id = 1
    # A third of the parties have releases, invitations and competitions; productions
    # released at the others are linked from the production's side only.
    with_releases = max(1, len(cat["parties"]) // 3)
    for n, party in enumerate(cat["parties"][:with_releases]):
        chosen = rng.sample(productions, 4)
        party["releases"] = [p["id"] for p in chosen[:2]]
        released.update(party["releases"])
        party["invitations"] = [{"id": chosen[2]["id"]}]
        party["external_links"] = [_link(rng, n)]
        party["competitions"] = []
        for _ in range(rng.randint(0, 2)):
            entries = rng.sample(productions, rng.randint(1, 4))
            party["competitions"].append(
                {
                    "id": competition_id,
                    "name": rng.choice(["Demo", "4K Intro", "Tracked Music"]),
                    "shown_date": rng.choice([None, party["start_date"]]),
                    "platform": rng.choice([None, dict(cat["platforms"][0])]),
                    "production_type": rng.choice([None, {"id": 1}]),
                    "results": [
                        {
                            "position": place,
                            "ranking": str(place),
                            "score": rng.choice(["", f"{100 - place} pts"]),
                            "production": entry["id"],
                        }
                        for place, entry in enumerate(entries, 1)
                    ],
                }
            )
            competition_id += 1
    party_ids = [party["id"] for party in cat["parties"]]
    for n, production in enumerate(productions):
        production["credits"] = [
            {
                "nick": nick,
                "category": rng.choice(["Code", "Music", "Graphics"]),
                "role": rng.choice(["", "Logo"]),
            }
            for nick in production["author_nicks"][:2]
        ]
        production["download_links"] = [
            {"link_class": "SceneOrgFile", "url": f"https://files.scene.org/view/x/{n}.zip"}
        ][: rng.randint(0, 1)]
        production["external_links"] = [_link(rng, n) for _ in range(rng.randint(0, 2))]
        production["screenshots"] = [
            {
                "original_url": f"https://media.example/{n}.png",
                "original_width": 640,
                "original_height": None,
                "standard_url": f"https://media.example/s/{n}.png",
                "standard_width": 400,
                "standard_height": 300,
                "thumbnail_url": f"https://media.example/t/{n}.png",
                "thumbnail_width": 200,
                "thumbnail_height": 150,
            }
        ][: rng.randint(0, 1)]
        production["created_at"] = _timestamp(rng)
        production["updated_at"] = _timestamp(rng)
        if production["id"] not in released and rng.random() < 0.1:
            production["release_parties"] = [rng.choice(party_ids[with_releases:])]
    for n, bbs in enumerate(cat["bbses"]):
        bbs["country_code"] = rng.choice(["", "NO", "US"])
        bbs["bbstros"] = [p["id"] for p in rng.sample(productions, rng.randint(0, 1))]
        bbs["staff"] = [
            {"releaser": r["id"], "role": "sysop", "is_current": rng.random() < 0.5}
            for r in rng.sample(releasers, rng.randint(0, 2))
        ]
        bbs["affiliations"] = [
            {"group": g["id"], "role": rng.choice(["", "010-whq"])}
            for g in rng.sample(groups, rng.randint(0, 1))
        ]


def write(catalogue, folder):
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for resource, records in catalogue.items():
        with (folder / f"{resource}.jsonl").open("w", encoding="utf-8") as out:
            for record in records:
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
    return folder
