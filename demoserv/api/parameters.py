"""One description of each query parameter, read by OPTIONS answers, the OpenAPI
document and (checked by a test) README's tables."""

FORMAT = (
    'Optional: "api" or "json" (empty: none): the body stays JSON and every url in it gets '
    '"?format=<value>"; "jsonp": the JSON wrapped as callback(...), application/javascript. '
    'A path may end in ".json" or ".api" instead of "/" to the same effect, every url then '
    "ending likewise."
)
CALLBACK = (
    'The JSONP function name (default "callback"), when format=jsonp or Accept asks for '
    "application/javascript: letters, digits, _ and $, parts separated by dots, at most 100 "
    "characters."
)
FIELDS = (
    "Comma-separated field names: only these fields of each record, in the record's "
    "order; unknown names are ignored. A list may name detail fields too."
)
# What every answer takes: how it is rendered.
RENDERING = {"format": FORMAT, "callback": CALLBACK}
PAGE = 'Page number from 1, or "last"; empty: page 1.'
UNPAGED = " The whole listing is one page."


def ordering_help(keys):
    return (
        "Comma-separated sort keys, each optionally prefixed with "
        f'"-" for descending: {", ".join(keys)}. Ties are broken by id in the '
        "direction of the first key."
    )


def describe_parameters(resource, detail):
    """{parameter: description} of a resource's list (or detail) answer."""
    common = {**RENDERING, "fields": FIELDS}
    if detail:
        return common
    return {
        "page": PAGE + ("" if resource.page_size else UNPAGED),
        "ordering": ordering_help(resource.keys),
        **{item.parameter: item.description for item in resource.filters},
        **common,
    }
