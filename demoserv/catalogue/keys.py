"""Sort keys computed once, at load, from the values records are loaded with."""

import re
import unicodedata

_DIGIT_RUN = re.compile(r"[0-9]+")
_SPACE_RUN = re.compile(r"\s+")
_ARTICLES = ("the ", "a ", "an ")
_FIRST_DAY_SUFFIX = {4: "-01-01", 7: "-01", 10: ""}


# Letters whose stroke or bar Unicode does not decompose: stripped like other accents,
# so that "Øresund" sorts among the o's and "Łódź" among the l's.
_STROKES = str.maketrans("ØøŁłĐđĦħŦŧƗɨƵƶ", "OoLlDdHhTtIiZz")


def strip_accents(text):
    decomposed = unicodedata.normalize("NFKD", text.translate(_STROKES))
    return "".join(char for char in decomposed if not unicodedata.combining(char))


def sortable_title(title):
    """Strip accents, ``$`` → ``s``, punctuation → spaces, collapse spaces, trim,
    lower-case, zero-pad digit runs to 9, move a leading article to the end."""
    text = strip_accents(title).replace("$", "s")
    text = "".join(char if char.isalnum() or char.isspace() else " " for char in text)
    text = _SPACE_RUN.sub(" ", text).strip().lower()
    text = _DIGIT_RUN.sub(lambda match: match.group().zfill(9), text)
    for article in _ARTICLES:
        if text.startswith(article):
            return f"{text[len(article) :]} {article.strip()}"
    return text


def name_key(name):
    """Case-insensitive, with names that start with punctuation, symbols or spaces
    first, then names that start with a digit, then the rest (letters)."""
    category = unicodedata.category(name[0]) if name else ""
    group = "2" if category.startswith("L") else "1" if category == "Nd" else "0"
    return group + name.lower()


def date_key(partial_date):
    """A partial date as its first day: ``1993`` → ``1993-01-01``; None stays None."""
    if partial_date is None:
        return None
    return partial_date + _FIRST_DAY_SUFFIX[len(partial_date)]
