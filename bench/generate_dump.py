"""Write a synthetic upstream export of any size, in exactly the form of the daily file.

    python bench/generate_dump.py OUT.sql.gz [--productions 375000] [--seed 1] [--plain]
                                  [--sample demozoo-export-sample.sql.gz]

The output is a plain-SQL pg_dump, gzipped unless --plain: the sample export's own text
(header, ``\\restrict`` line, SET lines, CREATE TABLE and other statements, trailer) is
copied from the sample as it is read, and so is every COPY header. The tables the API
reads get generated rows; ``django_content_type``, ``productions_productiontype`` and
``platforms_platform`` keep the sample's rows; every other table gets an empty COPY block.
The sequences of the generated tables are set past their largest id.

Every count follows --productions at the real upstream's proportions: at 375,000
productions about 110,000 releasers, 150,000 nicks, 900,000 credits, 1,000,000 production
links, 350,000 screenshots, 12,000 parties and 800,000 tagged items. Every foreign key
points at an existing row and every unique constraint of the schema holds. Rows are
mostly, not strictly, in id order, as in the real file. The text has what an importer must
cope with: UTF-8 names, tabs, newlines and backslashes (COPY-escaped), NULLs, partial
dates, scores and rankings as strings, link classes of every kind, archived ones too.
The same seed gives the same file, byte for byte.
"""

import argparse
import array
import datetime
import functools
import gzip
import heapq
import io
import math
import os
import random
import re
import sys
import time
import unicodedata
from pathlib import Path

DEFAULT_SAMPLE = os.environ.get(
    "DEMOSERV_UPSTREAM_SAMPLE",
    str(
        Path(__file__).resolve().parent.parent / "tests/data/upstream/demozoo-export-sample.sql.gz"
    ),
)
FULL_SIZE = 375_000
NULL = "\\N"

# Tables whose rows are copied from the sample (the API needs them; they are small and
# fixed upstream). Every other table not in GENERATORS gets an empty COPY block.
KEPT = ("django_content_type", "productions_productiontype", "platforms_platform")

WORDS = (
    "plasma copper raster sprite blitter vector cube fractal nova echo signal horizon mind "
    "reality dream tunnel ocean voxel zoom pixel glenz rotator scroller bob omega zenith "
    "ember delta chrome fire ice crystal nebula quasar pulse sync flux byte state art "
    "heaven seven lux aeterna debris elevated product planet zero night sky beyond"
).split()
# Words outside ASCII; the first group is Latin-1, so scene.org paths can use it.
LATIN1_WORDS = "Ölgemälde Ærø Møre Fête café naïve Straße São Åsa Über señor".split()
OTHER_WORDS = "Łódź Žár Кефир Демо Ωmega ファミコン 東方 Čech Ağır ★star".split()
# Text that needs COPY escaping, or that an importer might mangle.
AWKWARD_TITLES = (
    "C:\\DEMOS\\",
    "\\o/",
    "back\\slash",
    "Tab\tSeparated",
    "Two\nLines",
    "  padded  ",
    "100% $ynergy",
    "'quoted' \"title\"",
    "semi;colon",
    "\\N",
    "\\.",
)
ARTICLES = ("The ", "A ", "An ")
COUNTRIES = (
    ("FI", "Finland", 64, 26),
    ("DE", "Germany", 51, 10),
    ("SE", "Sweden", 62, 15),
    ("NO", "Norway", 62, 10),
    ("PL", "Poland", 52, 20),
    ("HU", "Hungary", 47, 20),
    ("NL", "Netherlands", 52, 5),
    ("DK", "Denmark", 56, 10),
    ("GB", "United Kingdom", 54, -2),
    ("FR", "France", 46, 2),
    ("CZ", "Czechia", 49.75, 15.5),
    ("RU", "Russia", 60, 100),
    ("AU", "Australia", -25, 135),
    ("US", "United States", 39.76, -98.5),
    ("IT", "Italy", 42.83, 12.83),
    ("ES", "Spain", 40, -4),
)
CREDIT_CATEGORIES = ("Code", "Music", "Graphics", "Text", "Other", "")
CREDIT_CATEGORY_WEIGHTS = (28, 30, 25, 6, 6, 2)
CREDIT_ROLES = (
    "Synth",
    "Loader and depacker, extra effects in part 3",
    "3D models",
    "Amiga port",
    "4-channel version",
    "additional code",
    "Direction",
    'Music ("Outro")',
    "Packer",
    "Font",
    "Support",
    "Grafik für das Intro",
    "Logo",
    "Звук",
    "C:\\TOOLS\\PACKER",
    "tab\there",
)
COMPETITION_NAMES = (
    "C64 4K Intro",
    "Music",
    "4K Intro",
    "Game",
    "Oldskool Demo",
    "Intro",
    "Streaming Music",
    "Combined Demo",
    "Graphics",
    "Grafik (Ölgemälde)",
    "ASCII",
    "Shader Showdown",
    "Wild",
    "Fast Music",
    "Amiga Demo",
    "Pixel Graphics",
    "Photo",
    "Tracked Music",
    "Executable Music",
    "64K Intro",
    "Fast Graphics",
    "PC Demo",
    "Demo",
    "256 Byte",
    "Демо",
)
SCORE_SUFFIXES = ("", "", " pts", ".0", ".5")
BBS_AFFILIATION_ROLES = ("010-whq", "015-ehq", "020-hq", "030-memberboard", "040-distsite", "")
BBS_AFFILIATION_WEIGHTS = (25, 7, 24, 12, 17, 15)
LINK_DESCRIPTIONS = ("party version", "fixed", "AGA", "final version", "ÖSTERREICH edition")
SCREEN_SIZES = (
    (320, 256),
    (640, 400),
    (160, 200),
    (1920, 1080),
    (300, 200),
    (1600, 1200),
    (200, 150),
    (176, 144),
    (256, 192),
    (800, 600),
    (2560, 1440),
    (1024, 768),
    (384, 272),
    (400, 300),
    (1280, 720),
)
TAGS = (
    "3d c64-sid competition-winner fractal nvidia ray-marching rotozoomer scroller shader "
    "sizecoding unknown-location wild amiga-aga"
).split()

# Link classes by the list they belong to upstream (LINK_CLASSES.md): name -> weight.
# Archived classes (hidden by the API) are kept at a small weight.
PRODUCTION_DOWNLOAD_CLASSES = frozenset(
    "AmigascneFile SceneOrgFile FujiologyFile UntergrundFile PaduaOrgFile ModlandFile".split()
)
UNFORCED_CLASSES = frozenset("BaseUrl WaybackMachinePage DosDemosVideo AsciiarenaRelease".split())
PRODUCTION_LINK_CLASSES = {
    "SceneOrgFile": 25, "BaseUrl": 12, "PouetProduction": 12, "YoutubeVideo": 10,
    "ModlandFile": 3, "DosDemosVideo": 3, "VimeoVideo": 3, "CsdbRelease": 3,
    "ZxArtProduction": 2, "AmigascneFile": 1.5, "FujiologyFile": 1.5, "UntergrundFile": 1.5,
    "PaduaOrgFile": 1.5, "GithubDirectory": 1.5, "ShadertoyShader": 1.5, "WikipediaPage": 1.5,
    "AsciiarenaRelease": 1, "ArtcityImage": 1, "AtarikiEntry": 1, "AtarimaniaPage": 1,
    "BandcampTrack": 1, "BitjamSong": 1, "C64chProduction": 1, "CablesProd": 1, "CsdbMusic": 1,
    "DeepSIDTrack": 1, "Defacto2File": 1, "DhsVideoDbVideo": 1, "DiscogsRelease": 1,
    "DOPEdition": 1, "EventsRetrosceneRelease": 1, "GameboyDemospottingDemo": 1,
    "GithubAccount": 1, "GithubRepo": 1, "HallOfLightGame": 1, "HearthisTrack": 1,
    "InternetArchivePage": 1, "KestraBitworldRelease": 1, "ModarchiveModule": 1,
    "NectarineSong": 1, "Pico8Cart": 1, "PixeljointImage": 1, "Plus4WorldProduction": 1,
    "ScenesatTrack": 1, "SixteenColorsPack": 1, "SoundcloudTrack": 1, "SpeccyPlProduction": 1,
    "SpeccyWikiPage": 1, "SpectrumComputingRelease": 1, "SpotifyTrack": 1, "Tic80Cart": 1,
    "WaybackMachinePage": 1, "ZxArtMusic": 1, "ZxArtPicture": 1, "ZXPressIssue": 1,
    "CappedVideo": 0.4, "DemosceneTvVideo": 0.4, "PushnpopProduction": 0.4,
    "StonishDisk": 0.4, "ZxdemoItem": 0.4,
}  # fmt: skip
RELEASER_LINK_CLASSES = {
    "BaseUrl": 5, "PouetGroup": 4, "SceneidAccount": 3, "CsdbScener": 2, "CsdbGroup": 2,
    "TwitterAccount": 2, "GithubAccount": 2, "DeviantartUser": 2, "SceneOrgFolder": 2,
    "WikipediaPage": 2, "BandcampArtist": 1.5, "SoundcloudUser": 1.5, "YoutubeUser": 1.5,
    "AmpAuthor": 1.5, "MastodonAccount": 1, "ArtcityArtist": 0.5, "AsciiarenaArtist": 0.5,
    "AsciiarenaCrew": 0.5, "AtarikiEntry": 0.5, "AtariLegendMenuset": 0.5,
    "AtarimaniaPage": 0.5, "BitjamAuthor": 0.5, "BlueskyAccount": 0.5, "C64chGroup": 0.5,
    "C64chScener": 0.5, "CablesUser": 0.5, "DeepSIDProfile": 0.5, "Defacto2Group": 0.5,
    "Defacto2Person": 0.5, "DemopartyNetUser": 0.5, "DiscogsArtist": 0.5, "DiscogsLabel": 0.5,
    "FacebookPage": 0.5, "FujiologyFolder": 0.5, "GameboyDemospottingAuthor": 0.5,
    "GithubRepo": 0.5, "HallOfLightArtist": 0.5, "HearthisUser": 0.5, "InstagramAccount": 0.5,
    "InternetArchivePage": 0.5, "KestraBitworldAuthor": 0.5, "LinkedInUser": 0.5,
    "MobygamesDeveloper": 0.5, "ModarchiveMember": 0.5, "NectarineArtist": 0.5,
    "NectarineGroup": 0.5, "Pico8User": 0.5, "PixeljointArtist": 0.5, "Plus4WorldGroup": 0.5,
    "Plus4WorldMember": 0.5, "Plus4WorldProfile": 0.5, "PolyworkUser": 0.5, "ScenesatAct": 0.5,
    "ShadertoyUser": 0.5, "SixteenColorsArtist": 0.5, "SixteenColorsGroup": 0.5,
    "SlengpungUser": 0.5, "SpeccyPlAuthor": 0.5, "SpeccyWikiPage": 0.5, "SpotifyArtist": 0.5,
    "TelnetLink": 0.5, "Tic80Dev": 0.5, "TikTokUser": 0.5, "TwitchChannel": 0.5,
    "VimeoUser": 0.5, "WaybackMachinePage": 0.5, "YoutubeChannel": 0.5, "ZxArtAuthor": 0.5,
    "ZxArtGroup": 0.5, "ZxTunesArtist": 0.5,
    "GooglePlusPage": 0.4, "PushnpopGroup": 0.4, "PushnpopProfile": 0.4, "ZxdemoAuthor": 0.4,
}  # fmt: skip
PARTY_LINK_CLASSES = {
    "DemopartyNetParty": 4, "SceneOrgFolder": 4, "PouetParty": 4, "BaseUrl": 4,
    "WikipediaPage": 2.5, "PartyWikiParty": 2.5, "YoutubeChannel": 2, "FacebookPage": 2,
    "CsdbEvent": 2, "SlengpungParty": 2, "TwitterAccount": 1.5, "AtarikiEntry": 0.5,
    "BlueskyAccount": 0.5, "BreaksAmigaParty": 0.5, "C64chParty": 0.5, "FujiologyFolder": 0.5,
    "InstagramAccount": 0.5, "KestraBitworldParty": 0.5, "MastodonAccount": 0.5,
    "Plus4WorldCompo": 0.5, "SpeccyWikiPage": 0.5, "TikTokUser": 0.5, "TwitchChannel": 0.5,
    "WaybackMachinePage": 0.5, "YoutubeUser": 0.5, "ZxArtParty": 0.5,
    "GooglePlusEvent": 0.4, "GooglePlusPage": 0.4, "LanyrdEvent": 0.4, "PushnpopParty": 0.4,
    "ZxdemoParty": 0.4,
}  # fmt: skip
# Classes whose parameter is a number; the others without a rule below take a slug.
NUMERIC_CLASSES = frozenset(
    "ArtcityImage ArtcityArtist AmpAuthor BitjamSong BreaksAmigaParty C64chProduction CsdbMusic "
    "CsdbRelease CsdbScener CsdbGroup CsdbEvent DemosceneTvVideo DhsVideoDbVideo DosDemosVideo "
    "HallOfLightArtist KestraBitworldRelease KestraBitworldAuthor KestraBitworldParty "
    "MobygamesDeveloper ModarchiveModule ModarchiveMember NectarineSong NectarineArtist "
    "NectarineGroup Pico8Cart Pico8User PixeljointImage PixeljointArtist Plus4WorldProduction "
    "Plus4WorldGroup Plus4WorldMember Plus4WorldCompo PouetProduction PouetGroup "
    "PushnpopProduction PushnpopGroup PushnpopProfile PushnpopParty SceneidAccount "
    "SlengpungParty SlengpungUser SpeccyPlProduction SpeccyPlAuthor SpectrumComputingRelease "
    "Tic80Cart Tic80Dev VimeoVideo ZXPressIssue ZxdemoItem ZxdemoAuthor ZxdemoParty "
    "ZxTunesArtist GameboyDemospottingDemo GameboyDemospottingAuthor C64chScener C64chGroup "
    "C64chParty AtariLegendMenuset".split()
)
_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})
_DIGIT_RUN = re.compile(r"[0-9]+")
_ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_EPOCH_2008 = 1199145600


def esc(text):
    """A text value as a COPY field: backslash, tab, newline and CR escaped."""
    return text.translate(_COPY_ESCAPES)


@functools.lru_cache(maxsize=65536)
def sortable_title(title):
    """The upstream's sort key for a title (CONTRACT.md): accents dropped, ``$`` -> ``s``,
    punctuation -> spaces, spaces collapsed, lower case, digit runs padded to 9, a leading
    article moved to the end."""
    text = unicodedata.normalize("NFD", title)
    text = "".join(c for c in text if not unicodedata.combining(c)).replace("$", "s")
    text = "".join(" " if unicodedata.category(c).startswith("P") else c for c in text)
    text = " ".join(text.split()).lower()
    text = _DIGIT_RUN.sub(lambda match: match.group().zfill(9), text)
    for article in ("the ", "a ", "an "):
        if text.startswith(article):
            return f"{text[len(article) :]} {article.strip()}"
    return text


def search_title(text):
    """The upstream's search form of a name: lower case, punctuation dropped."""
    return " ".join(
        "".join(" " if unicodedata.category(c)[0] in "PS" else c for c in text).lower().split()
    )


def timestamp(seconds, micros):
    """A timestamptz as pg_dump writes it: trailing zeros of the fraction dropped."""
    text = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(seconds))
    if micros:
        text += f".{micros:06d}".rstrip("0")
    return text + "+00"


def coordinate(value):
    """A double precision as PostgreSQL prints it (``46``, ``50.925535``)."""
    value = round(value, 6)
    return str(int(value)) if value == int(value) else repr(value)


def how_many(rng, share, mean):
    """0 for 1 - share of the records; otherwise at least 1, on average ``mean``."""
    if rng.random() >= share:
        return 0
    if mean <= 1:
        return 1
    # Number of failures before a success with p = 1/mean has mean (mean - 1).
    return 1 + int(math.log(1.0 - rng.random()) / math.log(1.0 - 1.0 / mean))


def scaled(count, scale, least=1):
    return max(least, round(count * scale))


def spaced_ids(rng, n, start=1, gap_share=0.08):
    """n increasing ids from ``start``, with holes where rows were deleted."""
    ids = array.array("i")
    next_id = start
    for _ in range(n):
        ids.append(next_id)
        next_id += 1 if rng.random() >= gap_share else rng.randint(2, 6)
    return ids


class IdCounter:
    """Ids for a table written in generation order, with holes."""

    def __init__(self, rng, start=1):
        self.rng = rng
        self.next_id = start

    def __call__(self):
        current = self.next_id
        self.next_id += 1 if self.rng.random() >= 0.05 else self.rng.randint(2, 5)
        return current


def word(rng):
    roll = rng.random()
    if roll < 0.04:
        return rng.choice(LATIN1_WORDS)
    if roll < 0.06:
        return rng.choice(OTHER_WORDS)
    return rng.choice(WORDS)


def title(rng):
    if rng.random() < 0.002:
        return rng.choice(AWKWARD_TITLES)
    text = " ".join(word(rng) for _ in range(rng.choice((1, 1, 2, 2, 3))))
    if rng.random() < 0.3:
        text = text.title()
    if rng.random() < 0.08:
        text = rng.choice(ARTICLES) + text
    if rng.random() < 0.12:
        text += f" {rng.randint(2, 99)}"
    if rng.random() < 0.02:
        text += rng.choice((" (party version)", "!", " - remix", " 2.0", "..."))
    return text


def handle(rng):
    roll = rng.random()
    name = word(rng)
    if roll < 0.3:
        name = name.capitalize()
    elif roll < 0.4:
        name = name.upper()
    if rng.random() < 0.2:
        name += str(rng.randint(1, 99))
    if rng.random() < 0.001:
        name = rng.choice(("\\o/", "a\\b", "tab\tnick", "^_^"))
    return name


def group_name(rng):
    name = f"{word(rng).capitalize()} {word(rng).capitalize()}"
    return name if rng.random() < 0.6 else name.split()[0] + rng.choice(("", "s", " Inc", " Crew"))


def notes(rng, share):
    """Free text, sometimes several lines and a Windows path: most records have none."""
    if rng.random() >= share:
        return ""
    lines = [f"{title(rng)} by {handle(rng)}." for _ in range(rng.randint(1, 3))]
    if rng.random() < 0.2:
        lines.append("Run C:\\DEMO\\START.EXE\tfrom DOS.")
    return esc("\n".join(lines))


def slug(rng, separator="-"):
    return separator.join(rng.choice(WORDS) for _ in range(rng.randint(1, 3)))


def random_token(rng, length):
    return "".join(rng.choice(_ALNUM) for _ in range(length))


def link_parameter(rng, link_class, year=None):
    """A parameter that is valid for its class (LINK_CLASSES.md)."""
    year = year or rng.randint(1988, 2025)
    a, b = rng.choice(WORDS), rng.choice(WORDS)
    if link_class in NUMERIC_CLASSES:
        return str(rng.randint(1, 300_000))
    if link_class == "SceneOrgFile":
        # Stored decoded; Latin-1 only, since the URL re-quotes it as ISO-8859-1.
        name = f"{a}-{b}" if rng.random() < 0.9 else f"{rng.choice(LATIN1_WORDS)} ({b})"
        folder = rng.choice(("demo", "intro", "music", "in64k", "gfx", "wild"))
        extension = rng.choice(("zip", "rar", "d64", "lha"))
        return f"/parties/{year}/{a}{year % 100:02d}/{folder}/{name}.{extension}"
    if link_class == "SceneOrgFolder":
        return rng.choice((f"/parties/{year}/{a}/", f"/groups/{a}/", f"/music/artists/{a}/"))
    if link_class == "AmigascneFile":
        return f"/Groups/{a[0].upper()}/{a}-{b}.lha"
    if link_class == "FujiologyFile":
        return f"/demos/{rng.choice(('atari_st', 'falcon'))}/{a}-{b}.zip"
    if link_class == "FujiologyFolder":
        return f"/demos/{rng.choice(('atari_st', 'falcon'))}/{a}/"
    if link_class == "UntergrundFile":
        return f"/users/{a}/{b}-{rng.choice(WORDS)}.zip"
    if link_class == "PaduaOrgFile":
        return f"/Demos/{a}-{b}.d64"
    if link_class == "ModlandFile":
        tracker = rng.choice(("Fasttracker%202", "Impulsetracker", "Protracker"))
        return f"/pub/modules/{tracker}/{a}/{b}-{rng.choice(WORDS)}.mod"
    if link_class in ("BaseUrl", "WaybackMachinePage"):
        url = rng.choice(
            (f"https://{a}{b}.example.com/", f"https://www.{a}.example.net/{b}/index.html")
        )
        return f"{year}0101000000/{url}" if link_class == "WaybackMachinePage" else url
    if link_class == "WikipediaPage":
        lang = rng.choice(("en", "de", "fi", "pl", "hu"))
        return f"https://{lang}.wikipedia.org/wiki/{a.capitalize()}_{b.capitalize()}"
    if link_class == "MastodonAccount":
        return f"https://{rng.choice(('mastodon.social', 'chaos.social', 'bitbang.social'))}/@{a}"
    if link_class in ("BandcampTrack", "SoundcloudTrack", "HearthisTrack", "GithubRepo"):
        return f"{a}/{b}-{rng.choice(WORDS)}"
    if link_class == "DiscogsRelease":
        return f"{rng.randint(1000, 9_999_999)}/{a.capitalize()}-{b.capitalize()}"
    if link_class == "DOPEdition":
        return f"{a}/{rng.randint(1, 40)}"
    if link_class == "PouetParty":
        return f"{rng.randint(1, 2000)}/{year}"
    if link_class == "DemopartyNetParty":
        return f"{a}/{year}"
    if link_class == "GithubDirectory":
        return f"{a}/{b}-{rng.choice(WORDS)}/main/{slug(rng, '/')}"
    if link_class == "YoutubeVideo":
        video = random_token(rng, 11)
        return video if rng.random() < 0.9 else f"{video}/{rng.randint(1, 900)}"
    if link_class in ("ShadertoyShader", "Defacto2File"):
        return random_token(rng, 6)
    if link_class in ("SpotifyTrack", "SpotifyArtist"):
        return random_token(rng, 22)
    if link_class == "YoutubeChannel":
        return "UC" + random_token(rng, 22)
    if link_class == "StonishDisk":
        return f"{a}#st{rng.randint(1, 999)}"
    if link_class in ("ZxArtProduction", "ZxArtMusic", "ZxArtPicture"):
        return f"{a[0]}/{b}/{a}-{rng.choice(WORDS)}"
    if link_class == "DeepSIDTrack":
        return f"/DEMOS/A-F/{a.capitalize()}_{b.capitalize()}.sid"
    if link_class == "LanyrdEvent":
        return f"{year}/{a}"
    if link_class == "GooglePlusEvent":
        return "c" + random_token(rng, 26).lower()
    if link_class == "GooglePlusPage":
        return str(rng.randint(10**17, 10**18 - 1))
    if link_class == "TelnetLink":
        return f"bbs.{a}.example.org:{rng.choice((23, 2323, 6400))}"
    if link_class in ("PartyWikiParty", "SpeccyWikiPage", "AtarikiEntry"):
        return f"{a.capitalize()}_{b.capitalize()}"
    if link_class in ("TwitterAccount", "InstagramAccount", "TikTokUser", "TwitchChannel"):
        return f"{a}_{b}"
    if link_class == "BlueskyAccount":
        return f"{a}{b}.bsky.social"
    return f"{a}-{b}" if rng.random() < 0.5 else f"{a}{b}"


def class_picker(weights):
    names = list(weights)
    cumulative = []
    total = 0.0
    for name in names:
        total += weights[name]
        cumulative.append(total)
    return lambda rng: rng.choices(names, cum_weights=cumulative)[0]


def partial_date(rng, year):
    """(date, precision) of a dated record: y -> Jan 1, m -> the 1st, d -> a day."""
    roll = rng.random()
    if roll < 0.22:
        return f"{year:04d}-01-01", "y"
    month = rng.randint(1, 12)
    if roll < 0.3:
        return f"{year:04d}-{month:02d}-01", "m"
    return f"{year:04d}-{month:02d}-{rng.randint(1, 28):02d}", "d"


def a_year(rng):
    """Years 1982-2025, the 1990s busiest, as upstream."""
    return min(2025, max(1982, int(rng.triangular(1982, 2026, 1996))))


class Plan:
    """The records other tables point at, decided before any row is written: ids and the
    few attributes that rows of other tables depend on, in compact arrays."""

    def __init__(self, productions, seed, sample):
        rng = random.Random(f"{seed}:plan")
        scale = productions / FULL_SIZE
        self.scale = scale
        self.seed = seed

        self.platform_ids = [int(row[0]) for row in sample.rows["platforms_platform"]]
        self.type_ids = {"production": [], "music": [], "graphics": []}
        self.content_types = {
            (row[1], row[2]): int(row[0]) for row in sample.rows["django_content_type"]
        }
        types = [(int(row[0]), row[1], row[6]) for row in sample.rows["productions_productiontype"]]
        roots = {internal: path for _, path, internal in types if internal in ("music", "graphics")}
        for type_id, path, _ in types:
            supertype = next(
                (name for name, root in roots.items() if path.startswith(root)), "production"
            )
            self.type_ids[supertype].append(type_id)

        self.production_ids = spaced_ids(rng, productions)
        # 0 production, 1 music, 2 graphics
        self.production_supertype = bytearray(rng.choices((0, 1, 2), (71, 18, 11), k=productions))
        self.production_screenshots = bytearray(
            min(255, how_many(rng, 0.6, 1.56)) for _ in range(productions)
        )

        n_releasers = scaled(110_000, scale, 8)
        self.releaser_ids = spaced_ids(rng, n_releasers)
        self.releaser_is_group = bytearray(rng.random() < 0.25 for _ in range(n_releasers))
        self.releaser_is_group[0] = 1
        self.releaser_is_group[1] = 0
        self.releaser_names = [
            group_name(rng) if is_group else handle(rng) for is_group in self.releaser_is_group
        ]
        self.groups = array.array("i", (i for i, g in enumerate(self.releaser_is_group) if g))
        self.sceners = array.array("i", (i for i, g in enumerate(self.releaser_is_group) if not g))

        # Nicks: each releaser's own name first, then extra names for about a quarter.
        self.nick_releaser = array.array("i")
        self.nick_names = []
        self.nick_abbreviations = []
        for index, name in enumerate(self.releaser_names):
            is_group = self.releaser_is_group[index]
            names = [name]
            for _ in range(how_many(rng, 0.25, 1.45)):
                extra = group_name(rng) if is_group else handle(rng)
                if extra not in names:  # unique (releaser_id, name)
                    names.append(extra)
            for nick_name in names:
                self.nick_releaser.append(index)
                self.nick_names.append(nick_name)
                wants = rng.random() < (0.7 if is_group else 0.15)
                letters = "".join(c for c in nick_name if c.isalnum())[:3].upper()
                self.nick_abbreviations.append(letters if wants else "")
        self.nick_ids = spaced_ids(rng, len(self.nick_names))
        self.group_nicks = array.array(
            "i", (n for n, r in enumerate(self.nick_releaser) if self.releaser_is_group[r])
        )
        self.scener_nicks = array.array(
            "i", (n for n, r in enumerate(self.nick_releaser) if not self.releaser_is_group[r])
        )

        n_series = scaled(4_000, scale, 3)
        self.series_ids = spaced_ids(rng, n_series, start=1000, gap_share=0.3)
        self.series_names = []
        taken = set()
        for index in range(n_series):
            kind = rng.choice(("Party", "Convention", "Gathering", "Sessions", "Compo"))
            name = f"{word(rng).capitalize()} {kind}"
            if name in taken or rng.random() < 0.01:
                name = f"{name} {index}"
            if rng.random() < 0.003:
                name = "!" + name
            taken.add(name)
            self.series_names.append(name)

        n_parties = scaled(12_000, scale, 6)
        self.party_ids = spaced_ids(rng, n_parties)
        # A few large series, many of one or two parties.
        self.party_series = array.array(
            "i", (min(n_series - 1, int(n_series * rng.random() ** 1.7)) for _ in range(n_parties))
        )
        self.party_start = []
        self.party_precision = []
        for _ in range(n_parties):
            day, precision = partial_date(rng, a_year(rng))
            self.party_start.append(day)
            self.party_precision.append(precision)

        n_competitions = scaled(25_000, scale, 3)
        self.competition_ids = spaced_ids(rng, n_competitions)
        self.competition_party = array.array(
            "i", sorted(rng.randrange(n_parties) for _ in range(n_competitions))
        )

        self.bbs_ids = spaced_ids(rng, scaled(5_000, scale, 3))

        self.tag_names = list(TAGS)
        slugs = set(self.tag_names)
        n_tags = scaled(3_000, scale, len(TAGS))
        while len(self.tag_names) < n_tags:
            name = rng.choice((word(rng).lower(), f"{rng.choice(WORDS)}-{rng.choice(WORDS)}"))
            if rng.random() < 0.3:
                name += f"-{rng.randint(1, 999)}"
            tag_slug = slugify(name)
            if tag_slug in slugs or not tag_slug:
                continue
            slugs.add(tag_slug)
            self.tag_names.append(name)
        self.tag_ids = spaced_ids(rng, len(self.tag_names), gap_share=0.02)


def slugify(name):
    text = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


# --- Table generators: each yields dicts of column -> COPY field text, in id order. ---
# Columns left out take the schema's default (NULL, '' or false).


def gen_productions_production(plan, rng):
    n = len(plan.production_ids)
    supertypes = ("production", "music", "graphics")
    for index, production_id in enumerate(plan.production_ids):
        text = title(rng)
        roll = rng.random()
        if roll < 0.12:
            release, precision = NULL, ""
        elif roll < 0.1215:
            release, precision = partial_date(rng, a_year(rng))[0], ""  # a date, no precision
        else:
            release, precision = partial_date(rng, a_year(rng))
        created = _EPOCH_2008 + int(index / n * 560_000_000) + rng.randint(0, 86_400)
        yield {
            "id": str(production_id),
            "title": esc(text),
            "supertype": supertypes[plan.production_supertype[index]],
            "notes": notes(rng, 0.08),
            "release_date_date": release,
            "release_date_precision": precision,
            "demozoo0_id": str(production_id)
            if production_id < 30_000 and rng.random() < 0.3
            else NULL,
            "scene_org_id": str(rng.randint(1, 900_000)) if rng.random() < 0.1 else NULL,
            "has_bonafide_edits": "t" if rng.random() < 0.8 else "f",
            "include_notes_in_search": "t",
            "sortable_title": esc(sortable_title(text)),
            "created_at": timestamp(created, rng.randrange(1_000_000)),
            "updated_at": timestamp(
                created + rng.randint(0, 200_000_000), rng.randrange(1_000_000)
            ),
            "has_screenshot": "t" if plan.production_screenshots[index] else "f",
            "search_title": esc(search_title(text)),
            "locked": "t" if rng.random() < 0.001 else "f",
            "hide_from_search_engines": "t" if rng.random() < 0.0005 else "f",
        }


def _distinct(rng, draw, count):
    """Up to ``count`` distinct values from ``draw()`` (fewer when they keep repeating)."""
    chosen = []
    for _ in range(count * 3):
        if len(chosen) == count:
            break
        value = draw()
        if value not in chosen:
            chosen.append(value)
    return chosen


def _per_production_links(plan, rng, make):
    """Link-table rows ``(production_id, target)`` with ids in generation order."""
    next_id = IdCounter(rng)
    for index, production_id in enumerate(plan.production_ids):
        for target in make(index):
            yield next_id(), production_id, target


def gen_productions_production_types(plan, rng):
    pools = [plan.type_ids["production"], plan.type_ids["music"], plan.type_ids["graphics"]]

    def make(index):
        pool = pools[plan.production_supertype[index]]
        return _distinct(rng, lambda: rng.choice(pool), 2 if rng.random() < 0.067 else 1)

    for row_id, production_id, type_id in _per_production_links(plan, rng, make):
        yield {
            "id": str(row_id),
            "production_id": str(production_id),
            "productiontype_id": str(type_id),
        }


def gen_productions_production_platforms(plan, rng):
    platforms = plan.platform_ids

    def make(index):
        if plan.production_supertype[index] == 0:
            count = how_many(rng, 0.95, 1.55)
        else:
            count = how_many(rng, 0.3, 1.1)
        # The first platforms (Spectrum, C64, Amiga, ...) are the busiest.
        return _distinct(rng, lambda: platforms[int(len(platforms) * rng.random() ** 2.5)], count)

    for row_id, production_id, platform_id in _per_production_links(plan, rng, make):
        yield {
            "id": str(row_id),
            "production_id": str(production_id),
            "platform_id": str(platform_id),
        }


def _nick_picker(plan, rng, pool):
    return lambda: plan.nick_ids[pool[rng.randrange(len(pool))]]


def gen_productions_production_author_nicks(plan, rng):
    group_nick = _nick_picker(plan, rng, plan.group_nicks)
    scener_nick = _nick_picker(plan, rng, plan.scener_nicks)

    def make(index):
        count = how_many(rng, 0.88, 2.12)
        if plan.production_supertype[index] == 0:
            draw = group_nick if rng.random() < 0.7 else scener_nick
        else:
            draw = scener_nick if rng.random() < 0.9 else group_nick
        return _distinct(rng, draw, count)

    for row_id, production_id, nick_id in _per_production_links(plan, rng, make):
        yield {"id": str(row_id), "production_id": str(production_id), "nick_id": str(nick_id)}


def gen_productions_production_author_affiliation_nicks(plan, rng):
    group_nick = _nick_picker(plan, rng, plan.group_nicks)

    def make(index):
        if plan.production_supertype[index] == 0:
            count = how_many(rng, 0.17, 1.5)
        else:
            count = how_many(rng, 0.6, 1.3)
        return _distinct(rng, group_nick, count)

    for row_id, production_id, nick_id in _per_production_links(plan, rng, make):
        yield {"id": str(row_id), "production_id": str(production_id), "nick_id": str(nick_id)}


def gen_productions_credit(plan, rng):
    scener_nick = _nick_picker(plan, rng, plan.scener_nicks)
    any_nick = lambda: plan.nick_ids[rng.randrange(len(plan.nick_ids))]  # noqa: E731
    next_id = IdCounter(rng)
    for production_id in plan.production_ids:
        for _ in range(how_many(rng, 0.35, 6.86)):
            role = "" if rng.random() < 0.33 else rng.choice(CREDIT_ROLES)
            yield {
                "id": str(next_id()),
                "category": rng.choices(CREDIT_CATEGORIES, CREDIT_CATEGORY_WEIGHTS)[0],
                "role": esc(role),
                "nick_id": str(scener_nick() if rng.random() < 0.9 else any_nick()),
                "production_id": str(production_id),
            }


def gen_productions_productionlink(plan, rng):
    pick = class_picker(PRODUCTION_LINK_CLASSES)
    next_id = IdCounter(rng)
    for production_id in plan.production_ids:
        seen = set()
        for _ in range(how_many(rng, 0.7, 3.81)):
            link_class = pick(rng)
            parameter = link_parameter(rng, link_class)
            if link_class in PRODUCTION_DOWNLOAD_CLASSES:
                is_download = True
            elif link_class == "BaseUrl":
                is_download = rng.random() < 0.3
                if is_download:
                    parameter = f"https://dl.{rng.choice(WORDS)}.example.com/{slug(rng)}.zip"
            elif link_class in UNFORCED_CLASSES:
                is_download = rng.random() < 0.3
            else:
                is_download = False
            key = (link_class, parameter, is_download)
            if key in seen:  # unique (link_class, parameter, production_id, is_download_link)
                continue
            seen.add(key)
            yield {
                "id": str(next_id()),
                "link_class": link_class,
                "parameter": esc(parameter),
                "is_download_link": "t" if is_download else "f",
                "description": rng.choice(LINK_DESCRIPTIONS) if rng.random() < 0.15 else "",
                "is_unresolved_for_screenshotting": "f",
                "has_bad_image": "t" if rng.random() < 0.005 else "f",
                "production_id": str(production_id),
            }


def gen_productions_screenshot(plan, rng):
    next_id = IdCounter(rng)
    for index, production_id in enumerate(plan.production_ids):
        for _ in range(plan.production_screenshots[index]):
            row_id = next_id()
            width, height = rng.choice(SCREEN_SIZES)
            folder = f"{rng.randrange(256):02x}/{rng.randrange(256):02x}"
            extension = rng.choice(("png", "png", "jpg", "gif"))
            name = f"{folder}/{rng.randrange(65536):04x}.{row_id}.{extension}"
            thumb = min(1.0, 200 / width, 150 / height)
            standard = min(1.0, 400 / width, 300 / height)
            row = {
                "id": str(row_id),
                "original_url": f"https://media.demozoo.org/screens/o/{name}",
                "original_width": str(width),
                "original_height": str(height),
                "thumbnail_url": f"https://media.demozoo.org/screens/t/{name}",
                "thumbnail_width": str(max(1, round(width * thumb))),
                "thumbnail_height": str(max(1, round(height * thumb))),
                "standard_url": f"https://media.demozoo.org/screens/s/{name}",
                "standard_width": str(max(1, round(width * standard))),
                "standard_height": str(max(1, round(height * standard))),
                "production_id": str(production_id),
            }
            if rng.random() < 0.002:  # not processed yet: no sizes
                for column in list(row):
                    if column.endswith(("_width", "_height")):
                        row[column] = NULL
            yield row


def gen_demoscene_releaser(plan, rng):
    n = len(plan.releaser_ids)
    for index, releaser_id in enumerate(plan.releaser_ids):
        created = _EPOCH_2008 + int(index / n * 560_000_000) + rng.randint(0, 86_400)
        row = {
            "id": str(releaser_id),
            "name": esc(plan.releaser_names[index]),
            "is_group": "t" if plan.releaser_is_group[index] else "f",
            "notes": notes(rng, 0.03),
            "created_at": timestamp(created, rng.randrange(1_000_000)),
            "updated_at": timestamp(
                created + rng.randint(0, 200_000_000), rng.randrange(1_000_000)
            ),
            "locked": "f",
            "hide_from_search_engines": "f",
        }
        if not plan.releaser_is_group[index] and rng.random() < 0.3:
            code, country, latitude, longitude = rng.choice(COUNTRIES)
            row["location"] = esc(f"{rng.choice(WORDS).capitalize()}ville, {country}")
            row["country_code"] = code
            row["latitude"] = coordinate(latitude + rng.uniform(-2, 2))
            row["longitude"] = coordinate(longitude + rng.uniform(-2, 2))
            row["geonames_id"] = str(rng.randint(100_000, 9_000_000))
        yield row


def gen_demoscene_nick(plan, rng):
    for index, nick_id in enumerate(plan.nick_ids):
        yield {
            "id": str(nick_id),
            "name": esc(plan.nick_names[index]),
            "abbreviation": esc(plan.nick_abbreviations[index]),
            "differentiator": "" if rng.random() < 0.995 else rng.choice(("FI", "C64", "Amiga")),
            "releaser_id": str(plan.releaser_ids[plan.nick_releaser[index]]),
        }


def gen_demoscene_nickvariant(plan, rng):
    next_id = IdCounter(rng)
    for index, nick_id in enumerate(plan.nick_ids):
        count = how_many(rng, 0.3, 1.33)
        name = plan.nick_names[index]
        candidates = (
            plan.nick_abbreviations[index] or name.upper(),
            name.lower(),
            name + "^",
            name.replace(" ", ""),
            f"{name} {rng.randint(1, 9)}",
            handle(rng),
        )
        variants = []
        for _ in range(count):
            variant = rng.choice(candidates)
            if variant in variants and rng.random() < 0.97:  # a few are listed twice upstream
                continue
            variants.append(variant)
            yield {
                "id": str(next_id()),
                "name": esc(variant),
                "nick_id": str(nick_id),
                "search_title": esc(search_title(variant)),
            }


def gen_demoscene_membership(plan, rng):
    next_id = IdCounter(rng)
    groups, sceners = plan.groups, plan.sceners
    seen = set()
    target = scaled(70_000, plan.scale)
    # Members in releaser order; about one in six is a group (a subgroup).
    chosen = []
    for _ in range(target):
        pool = groups if rng.random() < 0.16 else sceners
        chosen.append(pool[rng.randrange(len(pool))])
    chosen.sort()
    for member in chosen:
        group = groups[rng.randrange(len(groups))]
        if group == member or (group, member) in seen:
            continue
        seen.add((group, member))
        yield {
            "id": str(next_id()),
            "is_current": "t" if rng.random() < 0.74 else "f",
            "group_id": str(plan.releaser_ids[group]),
            "member_id": str(plan.releaser_ids[member]),
        }


def _external_links(rng, owner_ids, share, mean, classes, owner_column, years=None):
    pick = class_picker(classes)
    next_id = IdCounter(rng)
    for index, owner_id in enumerate(owner_ids):
        seen = set()
        for _ in range(how_many(rng, share, mean)):
            link_class = pick(rng)
            parameter = link_parameter(rng, link_class, years[index] if years else None)
            if (link_class, parameter) in seen:  # unique (link_class, parameter, owner)
                continue
            seen.add((link_class, parameter))
            yield {
                "id": str(next_id()),
                "link_class": link_class,
                "parameter": esc(parameter),
                owner_column: str(owner_id),
                "source": "",
            }


def gen_demoscene_releaserexternallink(plan, rng):
    return _external_links(rng, plan.releaser_ids, 0.3, 1.82, RELEASER_LINK_CLASSES, "releaser_id")


def gen_parties_partyexternallink(plan, rng):
    years = [int(day[:4]) for day in plan.party_start]
    return _external_links(rng, plan.party_ids, 0.35, 3.57, PARTY_LINK_CLASSES, "party_id", years)


def gen_parties_partyseries(plan, rng):
    for index, series_id in enumerate(plan.series_ids):
        yield {
            "id": str(series_id),
            "name": esc(plan.series_names[index]),
            "notes": notes(rng, 0.02),
            "website": f"https://party{index}.example.org/" if rng.random() < 0.6 else "",
        }


def gen_parties_party(plan, rng):
    taken = set()
    for index, party_id in enumerate(plan.party_ids):
        start, precision = plan.party_start[index], plan.party_precision[index]
        end = start
        if precision == "d":
            end = (
                datetime.date.fromisoformat(start)
                + datetime.timedelta(days=rng.choice((0, 1, 2, 2, 2, 3)))
            ).isoformat()
        series_name = plan.series_names[plan.party_series[index]]
        name = f"{series_name.split()[0]} {start[:4]}"
        if name in taken:
            name = f"{name} #{index}"  # party names are unique upstream
        taken.add(name)
        online = rng.random() < 0.12
        row = {
            "id": str(party_id),
            "name": esc(name),
            "tagline": esc(f"the {word(rng)} party") if rng.random() < 0.48 else "",
            "start_date_date": start,
            "start_date_precision": precision,
            "end_date_date": end,
            "end_date_precision": precision,
            "is_online": "t" if online else "f",
            "notes": notes(rng, 0.05),
            "website": f"https://p{index}.example.net/" if rng.random() < 0.6 else "",
            "sceneorg_compofolders_done": "t" if rng.random() < 0.2 else "f",
            "party_series_id": str(plan.series_ids[plan.party_series[index]]),
            "search_title": esc(search_title(name)),
            "is_cancelled": "t" if rng.random() < 0.005 else "f",
        }
        if not online and rng.random() < 0.85:
            code, country, latitude, longitude = rng.choice(COUNTRIES)
            row["location"] = esc(f"{word(rng).capitalize()}town, {country}")
            row["country_code"] = code
            row["latitude"] = coordinate(latitude + rng.uniform(-2, 2))
            row["longitude"] = coordinate(longitude + rng.uniform(-2, 2))
            row["geonames_id"] = str(rng.randint(100_000, 9_000_000))
        yield row


def _party_productions(plan, rng, share, mean):
    next_id = IdCounter(rng)
    productions = plan.production_ids
    for party_id in plan.party_ids:
        chosen = _distinct(
            rng, lambda: productions[rng.randrange(len(productions))], how_many(rng, share, mean)
        )
        for production_id in chosen:  # unique (party_id, production_id)
            yield {
                "id": str(next_id()),
                "party_id": str(party_id),
                "production_id": str(production_id),
            }


def gen_parties_party_releases(plan, rng):
    return _party_productions(plan, rng, 0.4, 14.6)


def gen_parties_party_invitations(plan, rng):
    return _party_productions(plan, rng, 0.2, 1.25)


def gen_parties_competition(plan, rng):
    for index, competition_id in enumerate(plan.competition_ids):
        party = plan.competition_party[index]
        roll = rng.random()
        if roll < 0.12:
            shown, precision = NULL, ""
        elif roll < 0.14:
            shown, precision = plan.party_start[party], ""  # a date, no precision
        else:
            shown, precision = plan.party_start[party], plan.party_precision[party]
        yield {
            "id": str(competition_id),
            "name": esc(rng.choice(COMPETITION_NAMES)),
            "shown_date_date": shown,
            "shown_date_precision": precision,
            "party_id": str(plan.party_ids[party]),
            "platform_id": str(rng.choice(plan.platform_ids)) if rng.random() < 0.3 else NULL,
            "production_type_id": (
                str(rng.choice(plan.type_ids["production"] + plan.type_ids["music"]))
                if rng.random() < 0.5
                else NULL
            ),
        }


def gen_parties_competitionplacing(plan, rng):
    next_id = IdCounter(rng)
    productions = plan.production_ids
    for competition_id in plan.competition_ids:
        count = how_many(rng, 0.95, 8.4)
        chosen = _distinct(rng, lambda: productions[rng.randrange(len(productions))], count)
        with_scores = rng.random() < 0.35
        suffix = rng.choice(SCORE_SUFFIXES)
        score = rng.randint(50 * len(chosen), 300 * len(chosen) + 100)
        # Equal places share a position, and all of them are ranked "N=".
        positions = []
        for place in range(1, len(chosen) + 1):
            tied = positions and rng.random() < 0.05
            positions.append(positions[-1] if tied else place)
        for place, production_id in enumerate(chosen):
            position = positions[place]
            shared = positions.count(position) > 1
            ranking = f"{position}=" if shared else str(position)
            if rng.random() < 0.012:
                ranking = ""
            if place and position != positions[place - 1]:
                score = max(0, score - rng.randint(1, 120))
            if with_scores:
                score_text = f"{score}{suffix}" if suffix != ".5" else f"{score / 10:.1f}"
            else:
                score_text = ""
            yield {
                "id": str(next_id()),
                "ranking": ranking,
                "position": str(position),
                "score": score_text,
                "competition_id": str(competition_id),
                "production_id": str(production_id),
            }


def gen_bbs_bbs(plan, rng):
    n = len(plan.bbs_ids)
    for index, bbs_id in enumerate(plan.bbs_ids):
        name = rng.choice(("", "", "", "1st ", "The ")) + f"{word(rng).capitalize()} BBS"
        created = _EPOCH_2008 + 400_000_000 + int(index / n * 150_000_000)
        row = {
            "id": str(bbs_id),
            "name": esc(name),
            "notes": notes(rng, 0.05),
            "search_title": esc(search_title(name)),
            "created_at": timestamp(created, rng.randrange(1_000_000))
            if rng.random() < 0.9
            else NULL,
            "updated_at": timestamp(created + 5_000_000, 0) if rng.random() < 0.9 else NULL,
        }
        if rng.random() < 0.88:
            code, country, latitude, longitude = rng.choice(COUNTRIES)
            if rng.random() < 0.5:
                row["location"] = esc(f"{word(rng).capitalize()}ville, {country}")
                row["latitude"] = coordinate(latitude + rng.uniform(-2, 2))
                row["longitude"] = coordinate(longitude + rng.uniform(-2, 2))
            else:
                row["location"] = esc(country)
                row["latitude"] = coordinate(latitude)
                row["longitude"] = coordinate(longitude)
            row["country_code"] = code if rng.random() < 0.7 else ""
        yield row


def gen_bbs_bbs_bbstros(plan, rng):
    next_id = IdCounter(rng)
    productions = plan.production_ids
    for bbs_id in plan.bbs_ids:
        chosen = _distinct(
            rng, lambda: productions[rng.randrange(len(productions))], how_many(rng, 0.3, 2)
        )
        for production_id in chosen:  # unique (bbs_id, production_id)
            yield {"id": str(next_id()), "bbs_id": str(bbs_id), "production_id": str(production_id)}


def gen_bbs_operator(plan, rng):
    next_id = IdCounter(rng)
    for bbs_id in plan.bbs_ids:
        for place in range(how_many(rng, 0.6, 2)):
            pool = plan.sceners if rng.random() < 0.95 else plan.groups
            yield {
                "id": str(next_id()),
                "role": "sysop" if place == 0 or rng.random() < 0.2 else "co-sysop",
                "bbs_id": str(bbs_id),
                "releaser_id": str(plan.releaser_ids[pool[rng.randrange(len(pool))]]),
                "is_current": "t" if rng.random() < 0.65 else "f",
            }


def gen_bbs_affiliation(plan, rng):
    next_id = IdCounter(rng)
    groups = plan.groups
    for bbs_id in plan.bbs_ids:
        for _ in range(how_many(rng, 0.45, 1.78)):
            yield {
                "id": str(next_id()),
                "role": rng.choices(BBS_AFFILIATION_ROLES, BBS_AFFILIATION_WEIGHTS)[0],
                "bbs_id": str(bbs_id),
                "group_id": str(plan.releaser_ids[groups[rng.randrange(len(groups))]]),
            }


def gen_taggit_tag(plan, rng):
    for tag_id, name in zip(plan.tag_ids, plan.tag_names):
        yield {"id": str(tag_id), "name": esc(name), "slug": slugify(name)}


def gen_taggit_taggeditem(plan, rng):
    production_type = str(plan.content_types[("productions", "production")])
    bbs_type = str(plan.content_types[("bbs", "bbs")])
    tag_ids = plan.tag_ids
    n_tags = len(tag_ids)
    next_id = IdCounter(rng)
    bbs_ids = plan.bbs_ids
    # BBSes are tagged among the productions, as they were added over the years.
    bbs_every = max(1, len(plan.production_ids) // len(bbs_ids))
    bbs_index = 0

    def items(object_id, content_type, share, mean):
        chosen = _distinct(
            rng, lambda: tag_ids[int(n_tags * rng.random() ** 3)], how_many(rng, share, mean)
        )
        for tag_id in chosen:  # unique (content_type_id, object_id, tag_id)
            yield {
                "id": str(next_id()),
                "object_id": str(object_id),
                "content_type_id": content_type,
                "tag_id": str(tag_id),
            }

    for index, production_id in enumerate(plan.production_ids):
        yield from items(production_id, production_type, 0.59, 3.6)
        if index % bbs_every == 0 and bbs_index < len(bbs_ids):
            yield from items(bbs_ids[bbs_index], bbs_type, 0.68, 1.5)
            bbs_index += 1
    for bbs_id in bbs_ids[bbs_index:]:
        yield from items(bbs_id, bbs_type, 0.68, 1.5)


GENERATORS = {
    name[len("gen_") :]: function
    for name, function in list(globals().items())
    if name.startswith("gen_")
}


# --- Reading the sample and writing the dump. ---


class Sample:
    """The sample export: its schema (for column defaults) and the rows of the kept tables."""

    def __init__(self, path):
        self.path = Path(path)
        self.rows = {table: [] for table in KEPT}
        self.defaults = {}  # table -> {column: default field}
        table = None
        columns = None  # the columns of the CREATE TABLE being read
        copying = None  # the table whose COPY rows are being read
        for line in self.lines():
            if copying:
                if line == "\\.\n":
                    copying = None
                elif copying in self.rows:
                    self.rows[copying].append(line.rstrip("\n").split("\t"))
            elif columns is not None:
                if line.startswith(");"):
                    self.defaults[table] = columns
                    columns = None
                else:
                    name, _, rest = line.strip().rstrip(",").partition(" ")
                    columns[name.strip('"')] = _default(rest)
            elif line.startswith("CREATE TABLE public."):
                table = line.split()[2][len("public.") :]
                columns = {}
            elif line.startswith("COPY public."):
                copying = line.split()[1][len("public.") :]

    def lines(self):
        with gzip.open(self.path, "rt", encoding="utf-8", newline="\n") as stream:
            yield from stream


def _default(definition):
    """The field a column gets when a generator leaves it out."""
    if "NOT NULL" not in definition:
        return NULL
    if definition.startswith("boolean"):
        return "f"
    if definition.startswith(("character", "text")):
        return ""
    return None  # a generator must give it


def _copy_columns(header):
    inside = header[header.index("(") + 1 : header.rindex(")")]
    return [column.strip().strip('"') for column in inside.split(",")]


def _write_rows(out, table, columns, rows, defaults, order_rng):
    """Write rows in the given order except for a few held back a while, as in the real
    file (rows updated in place move). Returns (row count, largest id)."""
    missing = [c for c in columns if defaults.get(c) is None]
    held = []  # (write after this many rows, sequence, line)
    written = largest = 0
    pending = []
    for row in rows:
        for column in missing:
            if column not in row:
                raise ValueError(f"{table}.{column} needs a value")
        line = "\t".join([row[c] if c in row else defaults[c] for c in columns]) + "\n"
        largest = max(largest, int(row["id"]))
        written += 1
        if order_rng.random() < 0.003:
            heapq.heappush(held, (written + order_rng.randint(1, 5000), written, line))
        else:
            pending.append(line)
        while held and held[0][0] <= written:
            pending.append(heapq.heappop(held)[2])
        if len(pending) >= 2000:
            out.write("".join(pending))
            pending.clear()
    pending.extend(line for _, _, line in sorted(held))
    out.write("".join(pending))
    return written, largest


_SETVAL = re.compile(r"^SELECT pg_catalog\.setval\('public\.(\w+)_id_seq', \d+, (?:true|false)\);$")


def write_dump(out, plan, sample, seed):
    """Stream the sample, replacing COPY blocks; returns rows written per generated table."""
    counts = {}
    largest = {}
    lines = sample.lines()
    for line in lines:
        if line.startswith("COPY public."):
            out.write(line)
            table = line.split()[1][len("public.") :]
            for row_line in lines:  # the sample's rows
                if row_line == "\\.\n":
                    break
                if table in KEPT:
                    out.write(row_line)
            if table in GENERATORS:
                rows = GENERATORS[table](plan, random.Random(f"{seed}:{table}"))
                order_rng = random.Random(f"{seed}:order:{table}")
                columns = _copy_columns(line)
                defaults = sample.defaults[table]
                counts[table], largest[table] = _write_rows(
                    out, table, columns, rows, defaults, order_rng
                )
            out.write("\\.\n")
            continue
        match = _SETVAL.match(line)
        if match and match.group(1) in largest:
            table = match.group(1)
            line = f"SELECT pg_catalog.setval('public.{table}_id_seq', {largest[table]}, true);\n"
        out.write(line)
    return counts


def generate(out_path, productions=FULL_SIZE, seed=1, plain=False, sample_path=DEFAULT_SAMPLE):
    """Write the dump to ``out_path``; returns the number of rows of each generated table."""
    sample = Sample(sample_path)
    plan = Plan(productions, seed, sample)
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    with open(out_path, "wb") as raw:
        # mtime 0 and no file name in the header: the same seed gives the same bytes.
        binary = raw
        if not plain:
            binary = gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=3, filename="", mtime=0)
        with io.TextIOWrapper(binary, encoding="utf-8", newline="\n") as out:
            return write_dump(out, plan, sample, seed)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "out", type=Path, help="the file to write (OUT.sql.gz, or .sql with --plain)"
    )
    parser.add_argument("--productions", type=int, default=FULL_SIZE)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--plain", action="store_true", help="write uncompressed SQL")
    parser.add_argument(
        "--sample",
        type=Path,
        default=Path(DEFAULT_SAMPLE),
        help="the upstream's sample export, whose text and schema are copied",
    )
    args = parser.parse_args()
    started = time.monotonic()
    counts = generate(args.out, args.productions, args.seed, args.plain, args.sample)
    for table, count in sorted(counts.items()):
        print(f"{table:52} {count:>10,}")
    print(
        f"{args.out}: {args.out.stat().st_size:,} bytes in {time.monotonic() - started:.1f} s",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
