"""The upstream's ``/api/adhoc/`` answers (UPSTREAM.md), built once a catalogue's tables
are written and stored as bytes (``tables.adhoc_answers``), so that serving one is a
lookup: the id maps, pouet-credits, eq, group-abbreviations, and klubi's and scenesat's
list of every month that has releases (and the empty list, for any other month).

They read the catalogue's tables and ``tables.adhoc_*``, what the export holds beyond
the records (``adhoc_facts``).
"""

import itertools

import orjson

from ..store import tables
from ..store.values import ADHOC_MONTH_PATHS
from . import adhoc_values as values

KLUBI, SCENESAT = ADHOC_MONTH_PATHS
# The classes of the id maps: path -> (owner, link class, key of the other site's id).
ID_MAPS = {
    "pouet/prod-demozoo-ids-by-pouet-id/": ("production", "PouetProduction", "pouet_id"),
    "pouet/group-demozoo-ids-by-pouet-id/": ("releaser", "PouetGroup", "pouet_id"),
    "zxdemo/prod-demozoo-ids-by-zxdemo-id/": ("production", "ZxdemoItem", "zxdemo_id"),
    "zxdemo/group-demozoo-ids-by-zxdemo-id/": ("releaser", "ZxdemoAuthor", "zxdemo_id"),
    "zxdemo/party-demozoo-ids-by-zxdemo-id/": ("party", "ZxdemoParty", "zxdemo_id"),
}
POUET_PARTIES = "pouet/party-demozoo-ids-by-pouet-id/"
VIDEO_CLASSES = ("YoutubeVideo", "VimeoVideo", "DemosceneTvVideo", "CappedVideo")
# Types that are not shown at a demo show: a production of only these is left out.
NOT_SHOWN = ("Diskmagazine", "Tool", "Game", "Video", "Pack", "Musicdisk", "Chip Music Pack")
ZX_SPECTRUM = "ZX Spectrum"
HEADERS = {
    KLUBI: "Demozoo URL,Title,By,Release date,Party,Type,Platform,Download URL,Video URL,"
    "Pouet URL".split(","),
    SCENESAT: "Demozoo URL,Title,By,Release date,Type,Platform,Download URL".split(","),
    "eq/demos/": "ID,Demozoo URL,Title,By,Release date,Type,Nationality,Download URL".split(","),
    "group-abbreviations/": "ID,Demozoo URL,Name,Differentiator,Abbreviation,Other variants".split(
        ","
    ),
}


def build_answers(connection, digest):
    """Every answer into ``tables.adhoc_answers``, each also into ``digest`` (the
    catalogue version covers them)."""
    raw = connection.connection.driver_connection
    answers = Answers(raw)
    rows = [
        *answers.id_maps(),
        ("pouet-credits/", "", answers.pouet_credits()),
        ("eq/demos/", "", answers.eq()),
        ("group-abbreviations/", "", answers.group_abbreviations()),
        *((path, "", values.csv_body(HEADERS[path], [])) for path in ADHOC_MONTH_PATHS),
    ]
    for path, month, body in itertools.chain(rows, answers.months()):
        digest.update(b"%s\0%s\0%s\0" % (path.encode(), month.encode(), body))
        raw.execute(
            f"INSERT INTO main.{tables.adhoc_answers.name} VALUES (?, ?, ?)", (path, month, body)
        )


def _other_variants(variants, name, abbreviation):
    """A nick's variants but its name and abbreviation, as the upstream lists them."""
    return [variant for variant in orjson.loads(variants) if variant not in (name, abbreviation)]


def _ids(rows):
    return orjson.dumps(sorted({row[0] for row in rows}))


class Answers:
    """The answers, from the built tables (sqlite3 connection ``raw``)."""

    def __init__(self, raw):
        self.raw = raw

    def query(self, sql, parameters=()):
        return self.raw.execute(sql, parameters).fetchall()

    def links(self, owner, link_class):
        return self.query(
            f"SELECT parameter, owner_id FROM {tables.adhoc_links.name} "
            "WHERE owner = ? AND link_class = ? ORDER BY seq",
            (owner, link_class),
        )

    def id_maps(self):
        for path, (owner, link_class, key) in ID_MAPS.items():
            items = []
            for parameter, owner_id in self.links(owner, link_class):
                if values.is_id(parameter):  # from files: a URL that gives no id back is left out
                    items.append({key: values.numeric_id(parameter), "demozoo_id": owner_id})
            yield path, "", values.json_body(items)
        items = []
        for parameter, owner_id in self.links("party", "PouetParty"):
            if values.is_pouet_party(parameter):
                which, year = values.pouet_party(parameter)
                items.append({"pouet_id": which, "year": year, "demozoo_id": owner_id})
        yield POUET_PARTIES, "", values.json_body(items)

    def pouet_credits(self):
        """One item per (Pouet production, Pouet user): that user's credits on it, by
        category (as strings, as the upstream's SQL orders them)."""
        links = tables.adhoc_links.name
        # In this order (CROSS JOIN): each Pouet production's credits, then each credited
        # releaser's accounts; without statistics SQLite would pair every production
        # link with every account first.
        rows = self.query(
            "SELECT prod.parameter, account.parameter, c.category, c.role "
            f"FROM {links} AS prod CROSS JOIN {tables.credits.name} AS c "
            f"CROSS JOIN {links} AS account "
            "WHERE prod.owner = 'production' AND prod.link_class = 'PouetProduction' "
            "AND c.production_id = prod.owner_id AND account.owner = 'releaser' "
            "AND account.owner_id = c.releaser_id AND account.link_class = 'SceneidAccount' "
            "AND prod.parameter IS NOT NULL AND account.parameter IS NOT NULL "
            "ORDER BY prod.parameter, account.parameter, c.category, prod.seq, "
            "c.production_id, c.position, account.seq"
        )
        items = []
        for (prod, user), credits in itertools.groupby(rows, key=lambda row: row[:2]):
            roles = [f"{category} ({role})" if role else category for *_, category, role in credits]
            items.append({"pouet_prod_id": prod, "pouet_user_id": user, "role": ", ".join(roles)})
        return values.json_body(items)

    def group_abbreviations(self):
        rows = self.query(
            "SELECT n.releaser_id, n.name, a.differentiator, n.abbreviation, n.variants "
            f"FROM {tables.releaser_nicks.name} AS n "
            f"JOIN {tables.releasers.name} AS r ON r.id = n.releaser_id AND r.is_group "
            f"JOIN {tables.adhoc_nicks.name} AS a ON a.releaser_id = n.releaser_id "
            "AND a.position = n.position ORDER BY n.name, a.seq"
        )
        literal = values.literal
        return values.csv_body(
            HEADERS["group-abbreviations/"],
            (
                [
                    str(releaser_id),
                    values.site_literal("https", f"/groups/{releaser_id}/"),
                    literal(name),
                    literal(differentiator),
                    literal(abbreviation),
                    literal(", ".join(_other_variants(variants, name, abbreviation))),
                ]
                for releaser_id, name, differentiator, abbreviation, variants in rows
            ),
        )

    def _productions(self, where, order, parameters=()):
        """A cursor over (id, title, supertype, release date, unparsed byline)."""
        return self.raw.execute(
            "SELECT p.id, p.title, p.supertype, p.release_date, b.byline "
            f"FROM {tables.productions.name} AS p "
            f"JOIN {tables.adhoc_productions.name} AS b ON b.production_id = p.id "
            f"WHERE {where} ORDER BY {order}, b.seq",
            parameters,
        )

    def eq(self):
        rows = list(
            self._productions(
                "p.supertype = 'production' AND p.id IN (SELECT l.production_id FROM "
                f"{tables.production_platforms.name} AS l JOIN {tables.platforms.name} AS f "
                "ON f.id = l.platform_id WHERE f.name = ?)",
                "p.title",
                (ZX_SPECTRUM,),
            )
        )
        details = Details(self, rows)
        nationalities = details.nationalities()
        literal = values.literal
        return values.csv_body(
            HEADERS["eq/demos/"],
            (
                [
                    str(row[0]),
                    details.page(row),
                    literal(row[1]),
                    literal(details.byline(row)),
                    row[3] or "",
                    literal(details.names("types", row[0])),
                    " / ".join(nationalities.get(row[0], ())),
                    literal(" / ".join(details.downloads(row[0]))),
                ]
                for row in rows
            ),
        )

    def months(self):
        """Each month's klubi and scenesat lists, of every month with releases."""
        rows = self._productions(
            "p.supertype IN ('production', 'music') AND length(p.release_date) >= 7",
            "p.supertype, substr(p.release_date, 1, 7), p.release_date_key",
        )
        for (supertype, month), group in itertools.groupby(
            rows, key=lambda row: (row[2], row[3][:7])
        ):
            group = list(group)
            if supertype == "music":
                yield SCENESAT, month, self.scenesat(group)
            else:
                yield KLUBI, month, self.klubi(group)

    def klubi(self, rows):
        details = Details(self, rows, parties=True)
        shown = [
            row
            for row in rows
            if not details.types.get(row[0])
            or any(name not in NOT_SHOWN for name in details.types[row[0]])
        ]
        literal = values.literal
        return values.csv_body(
            HEADERS[KLUBI],
            (
                [
                    *details.month_cells(row),
                    literal(", ".join(details.parties.get(row[0], ()))),
                    literal(details.names("types", row[0])),
                    literal(details.names("platforms", row[0])),
                    values.plain(" / ".join(details.downloads(row[0]))),
                    values.plain(" / ".join(details.urls(row[0], VIDEO_CLASSES))),
                    values.plain(" / ".join(details.urls(row[0], ("PouetProduction",)))),
                ]
                for row in shown
            ),
        )

    def scenesat(self, rows):
        details = Details(self, rows)
        literal = values.literal
        return values.csv_body(
            HEADERS[SCENESAT],
            (
                [
                    *details.month_cells(row),
                    literal(details.names("types", row[0])),
                    literal(details.names("platforms", row[0])),
                    literal(" / ".join(details.downloads(row[0]))),
                ]
                for row in rows
            ),
        )


class Details:
    """What the CSV lists show of the productions ``rows`` (id, title, supertype,
    release date, unparsed byline), read with one query per relation."""

    def __init__(self, answers, rows, parties=False):
        self.answers = answers
        self.ids = _ids(rows)
        self.nicks = self._grouped(
            f"SELECT production_id, role, name FROM {tables.production_nicks.name} "
            "WHERE production_id IN (SELECT value FROM json_each(?)) "
            "ORDER BY production_id, role, position"
        )
        self.types = self._grouped(
            "SELECT l.production_id, t.name "
            f"FROM {tables.production_type_links.name} AS l "
            f"JOIN {tables.production_types.name} AS t ON t.id = l.production_type_id "
            "WHERE l.production_id IN (SELECT value FROM json_each(?)) "
            "ORDER BY l.production_id, l.position"
        )
        self.platforms = self._grouped(
            f"SELECT l.production_id, f.name FROM {tables.production_platforms.name} AS l "
            f"JOIN {tables.platforms.name} AS f ON f.id = l.platform_id "
            "WHERE l.production_id IN (SELECT value FROM json_each(?)) "
            "ORDER BY l.production_id, l.position"
        )
        self.links = self._grouped(
            "SELECT owner_id, link_class, parameter, url, is_download "
            f"FROM {tables.adhoc_links.name} WHERE owner = 'production' "
            "AND owner_id IN (SELECT value FROM json_each(?)) ORDER BY owner_id, link_class, seq"
        )
        if parties:
            # Its competitions' parties, then the parties it was released at (by name).
            self.parties = self._grouped(
                "SELECT production_id, name FROM (SELECT pl.production_id, 0 AS side, "
                "pl.production_position AS position, p.name "
                f"FROM {tables.placings.name} AS pl "
                f"JOIN {tables.competitions.name} AS c ON c.id = pl.competition_id "
                f"JOIN {tables.parties.name} AS p ON p.id = c.party_id "
                "WHERE pl.production_id IN (SELECT value FROM json_each(:ids)) "
                "UNION ALL SELECT r.production_id, 1, r.production_position, p.name "
                f"FROM {tables.party_releases.name} AS r "
                f"JOIN {tables.parties.name} AS p ON p.id = r.party_id "
                "WHERE r.production_id IN (SELECT value FROM json_each(:ids))) "
                "ORDER BY production_id, side, position",
                {"ids": self.ids},
            )

    def _grouped(self, sql, parameters=None):
        """{production id: [the rest of each row, or its one value]} of ``sql``."""
        rows = self.answers.query(sql, parameters if parameters is not None else (self.ids,))
        grouped = {}
        for owner, *rest in rows:
            grouped.setdefault(owner, []).append(rest[0] if len(rest) == 1 else rest)
        return grouped

    @staticmethod
    def page(row):
        return values.site_literal("http", values.page_path(row[2], row[0]))

    def month_cells(self, row):
        """The cells a month list begins with: address, title, byline, release date."""
        literal = values.literal
        return [
            self.page(row),
            literal(row[1]),
            literal(self.byline(row)),
            values.long_date(row[3]),
        ]

    def byline(self, row):
        if row[4]:
            return row[4]
        nicks = self.nicks.get(row[0], [])
        return values.byline(
            [name for role, name in nicks if role == "author"],
            [name for role, name in nicks if role == "affiliation"],
        )

    def names(self, relation, production_id):
        """Its types' or platforms' names, sorted, joined by ``", "``."""
        return ", ".join(sorted(getattr(self, relation).get(production_id, [])))

    def downloads(self, production_id):
        return [
            values.download_address(link_class, parameter, url)
            for link_class, parameter, url, is_download in self.links.get(production_id, [])
            if is_download
        ]

    def urls(self, production_id, classes):
        return [link[2] for link in self.links.get(production_id, []) if link[0] in classes]

    def nationalities(self):
        """{production id: its authors' and credited sceners' country codes}, or, for one
        by groups only without any, their members' when they all share one (sorted:
        the upstream's order is that of a Python set)."""
        releasers, memberships = tables.releasers.name, tables.memberships.name
        authors = self._grouped(
            "SELECT n.production_id, r.id, r.is_group, coalesce(r.country_code, '') "
            f"FROM {tables.production_nicks.name} AS n "
            f"JOIN {releasers} AS r ON r.id = n.releaser_id "
            "WHERE n.role = 'author' AND n.production_id IN (SELECT value FROM json_each(?))"
        )
        credited = self._grouped(
            f"SELECT c.production_id, coalesce(r.country_code, '') FROM {tables.credits.name} "
            f"AS c JOIN {releasers} AS r ON r.id = c.releaser_id "
            "WHERE c.production_id IN (SELECT value FROM json_each(?))"
        )
        groups = sorted({author[0] for rows in authors.values() for author in rows if author[1]})
        members = {}
        for group_id, code in self.answers.query(
            f"SELECT m.group_id, coalesce(r.country_code, '') FROM {memberships} AS m "
            f"JOIN {releasers} AS r ON r.id = m.member_id "
            "WHERE m.group_id IN (SELECT value FROM json_each(?))",
            (orjson.dumps(groups),),
        ):
            members.setdefault(group_id, set()).add(code)
        result = {}
        for production_id in orjson.loads(self.ids):
            by = authors.get(production_id, [])
            codes = {code for *_, code in by} | set(credited.get(production_id, []))
            codes.discard("")
            if not codes and by and all(is_group for _, is_group, _ in by):
                shared = set().union(*(members.get(group_id, set()) for group_id, *_ in by))
                codes = shared if len(shared) == 1 and "" not in shared else set()
            result[production_id] = sorted(codes)
        return result
