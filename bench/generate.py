"""Write a synthetic catalogue folder of any size, shaped like the real catalogue.

    python bench/generate.py OUT_DIR [--productions 375000] [--seed 1]

Shapes: several author nicks per production, affiliations for music and graphics,
many productions sharing a release date, about one in ten without a date and a
quarter with only a year or year-month; music and graphics without platforms; releasers
and parties in proportion to productions (about 110,000 releasers and 5,000 parties at
the full size); names and titles from a small vocabulary, so that they repeat.
"""

import argparse
import random
from pathlib import Path

import orjson

WORDS = (
    "second reality state of the art lifeforce elevated debris fr heaven seven "
    "the product cube mind is born stash planet zero signal lux aeterna "
    "ümlaut $pace élan crystal dream 64k 4k intro demo music tune pixel logo "
    "cracktro party invitation beyond horizon night sky chrome fire ice ocean"
).split()
TYPES = [
    (1, "Demo", "production"),
    (4, "Intro", "production"),
    (5, "Diskmag", "production"),
    (6, "Tool", "production"),
    (8, "Slideshow", "production"),
    (13, "Cracktro", "production"),
    (22, "32K Intro", "production"),
    (33, "Game", "production"),
    (41, "BBStro", "production"),
    (53, "BBS Door", "production"),
    (2, "4K Intro", "production"),
    (3, "64K Intro", "production"),
    (14, "Music", "music"),
    (29, "Tracked Music", "music"),
    (30, "Streaming Music", "music"),
    (23, "Graphics", "graphics"),
    (36, "Photo", "graphics"),
    (24, "ASCII", "graphics"),
]
COUNTRIES = ["FI", "DE", "SE", "NO", "PL", "HU", "NL", "DK", "GB", "FR", "CZ", "RU", "AU", "US"]


def _title(rng):
    words = rng.sample(WORDS, rng.choice([1, 1, 2, 2, 3]))
    title = " ".join(words)
    if rng.random() < 0.3:
        title = title.title()
    if rng.random() < 0.1:
        title = "The " + title
    if rng.random() < 0.15:
        title += f" {rng.randint(2, 99)}"
    return title


def _date(rng, year):
    roll = rng.random()
    if roll < 0.1:
        return None
    if roll < 0.25:
        return f"{year}"
    if roll < 0.35:
        return f"{year}-{rng.randint(1, 12):02d}"
    return f"{year}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


def _write(folder, name, records):
    with (folder / f"{name}.jsonl").open("wb") as out:
        for record in records:
            out.write(orjson.dumps(record) + b"\n")


def generate(folder, productions=375_000, seed=1):
    """Write the catalogue; returns the number of records of each resource."""
    rng = random.Random(seed)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    scale = productions / 375_000
    n_releasers = max(10, int(110_000 * scale))
    n_series = max(5, int(1_000 * scale))
    n_parties = max(10, int(5_000 * scale))
    n_bbses = max(10, int(3_000 * scale))

    platforms = [{"id": i, "name": f"{rng.choice(WORDS).title()} {i}"} for i in range(1, 91)]
    releasers = [
        {
            "id": i,
            "name": f"{rng.choice(WORDS)}{rng.choice(['', ' ', '-'])}{rng.choice(WORDS)}",
            "is_group": rng.random() < 0.35,
        }
        for i in range(1, n_releasers + 1)
    ]
    types = [{"id": i, "name": name, "supertype": st} for i, name, st in TYPES]
    series = [
        {
            "id": i,
            "name": f"{rng.choice(WORDS).title()} Party {i}",
            "website": rng.choice(["", f"https://party{i}.example/"]),
        }
        for i in range(1, n_series + 1)
    ]
    parties = []
    for i in range(1, n_parties + 1):
        online = rng.random() < 0.05
        located = not online and rng.random() < 0.9
        year = rng.randint(1985, 2025)
        start = _date(rng, year) or str(year)
        parties.append(
            {
                "id": i,
                "name": f"{rng.choice(WORDS).title()} {year}",
                "tagline": "",
                "start_date": start,
                "end_date": start,
                "location": "Somewhere" if located else "",
                "is_online": online,
                "country_code": rng.choice(COUNTRIES) if located else "",
                "latitude": round(rng.uniform(-60, 70), 4) if located else None,
                "longitude": round(rng.uniform(-150, 150), 4) if located else None,
                "website": "",
                "party_series": rng.choice([None, rng.randint(1, n_series)]),
            }
        )
    bbses = [
        {
            "id": i,
            "name": f"{rng.choice(WORDS).title()} BBS",
            "location": "",
            "latitude": None,
            "longitude": None,
            "tags": ["unknown-location"],
        }
        for i in range(1, n_bbses + 1)
    ]

    def nick(releaser):
        return {"name": releaser["name"], "abbreviation": "", "releaser": releaser}

    groups = [r for r in releasers if r["is_group"]]
    sceners = [r for r in releasers if not r["is_group"]]
    by_supertype = {
        st: [t for t in types if t["supertype"] == st] for st in ("production", "music", "graphics")
    }

    def production(i):
        supertype = rng.choices(["production", "music", "graphics"], [6, 3, 1])[0]
        if supertype == "production":
            authors = [nick(rng.choice(groups)) for _ in range(rng.choice([1, 1, 1, 2, 3]))]
            affiliations = []
            on = rng.sample(platforms, rng.choice([1, 1, 1, 2]))
        else:
            authors = [nick(rng.choice(sceners)) for _ in range(rng.choice([1, 1, 2]))]
            affiliations = [nick(rng.choice(groups)) for _ in range(rng.choice([0, 1, 1, 2]))]
            on = []
        return {
            "id": i,
            "title": _title(rng),
            "author_nicks": authors,
            "author_affiliation_nicks": affiliations,
            "release_date": _date(rng, rng.randint(1980, 2025)),
            "supertype": supertype,
            "platforms": on,
            "types": [rng.choice(by_supertype[supertype])],
            "tags": rng.sample(
                ["demo", "c64", "4k", "classic", "party-version"], rng.randint(0, 2)
            ),
        }

    _write(folder, "platforms", platforms)
    _write(folder, "production_types", types)
    _write(folder, "releasers", releasers)
    _write(folder, "party_series", series)
    _write(folder, "parties", parties)
    _write(folder, "bbses", bbses)
    _write(folder, "productions", (production(i) for i in range(1, productions + 1)))
    return {
        "platforms": len(platforms),
        "production_types": len(types),
        "releasers": len(releasers),
        "party_series": len(series),
        "parties": len(parties),
        "bbses": len(bbses),
        "productions": productions,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--productions", type=int, default=375_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    print(generate(args.out, args.productions, args.seed))


if __name__ == "__main__":
    main()
