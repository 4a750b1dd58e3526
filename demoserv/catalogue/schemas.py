"""The records of catalogue files, as marshmallow schemas that load (validate) them and
dump them back (export). Types are strict: ``"12"`` is not an integer, ``1`` is not a
boolean, and partial dates must be real calendar dates."""

import datetime
import math
import re

from marshmallow import EXCLUDE, Schema, ValidationError, fields, validate

SUPERTYPES = ("production", "music", "graphics")
MAX_ID = 2**63 - 1
_PARTIAL_DATE = re.compile(r"([0-9]{4})(?:-([0-9]{2})(?:-([0-9]{2}))?)?")


class StrictInteger(fields.Integer):
    def _validated(self, value):
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.make_error("invalid")
        return value


class StrictFloat(fields.Float):
    def _validated(self, value):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.make_error("invalid")
        if not math.isfinite(value):
            raise self.make_error("special")
        return float(value)


class StrictBoolean(fields.Boolean):
    def _deserialize(self, value, attr, data, **kwargs):
        if not isinstance(value, bool):
            raise self.make_error("invalid")
        return value


def check_partial_date(value):
    """``YYYY``, ``YYYY-MM`` or ``YYYY-MM-DD``, naming a real month or day."""
    match = _PARTIAL_DATE.fullmatch(value)
    if not match:
        raise ValidationError(f'"{value}" is not a date of the form YYYY, YYYY-MM or YYYY-MM-DD.')
    year, month, day = (int(part) if part else 1 for part in match.groups())
    try:
        datetime.date(year, month, day)
    except ValueError:
        raise ValidationError(f'"{value}" is not a real date.') from None


def _id():
    return StrictInteger(required=True, validate=validate.Range(1, MAX_ID))


def _text():
    return fields.String(required=True)


def _coordinate(limit):
    return StrictFloat(required=True, allow_none=True, validate=validate.Range(-limit, limit))


def _supertype():
    return fields.String(required=True, validate=validate.OneOf(SUPERTYPES))


def _tags():
    return fields.List(fields.String(), required=True)


def _partial_date(**kwargs):
    return fields.String(required=True, validate=check_partial_date, **kwargs)


class RecordSchema(Schema):
    class Meta:
        unknown = EXCLUDE  # url, service_url and fields of later versions are ignored


class PlatformRecord(RecordSchema):
    id = _id()
    name = _text()


class ProductionTypeRecord(RecordSchema):
    id = _id()
    name = _text()
    supertype = _supertype()


class ReleaserRecord(RecordSchema):
    id = _id()
    name = _text()
    is_group = StrictBoolean(required=True)


class PartySeriesRecord(RecordSchema):
    id = _id()
    name = _text()
    website = _text()


class PartyRecord(RecordSchema):
    id = _id()
    name = _text()
    tagline = _text()
    start_date = _partial_date()
    end_date = _partial_date()
    location = _text()
    is_online = StrictBoolean(required=True)
    country_code = fields.String(
        required=True,
        validate=validate.Regexp(
            r"(?:[A-Z]{2})?\Z", error="must be two uppercase letters or empty."
        ),
    )
    latitude = _coordinate(90)
    longitude = _coordinate(180)
    website = _text()
    party_series = StrictInteger(
        load_default=None, allow_none=True, validate=validate.Range(1, MAX_ID)
    )


class BBSRecord(RecordSchema):
    id = _id()
    name = _text()
    location = _text()
    latitude = _coordinate(90)
    longitude = _coordinate(180)
    tags = _tags()


class NickRecord(RecordSchema):
    name = _text()
    abbreviation = _text()
    releaser = fields.Nested(ReleaserRecord, required=True)


class ProductionRecord(RecordSchema):
    id = _id()
    title = _text()
    author_nicks = fields.List(fields.Nested(NickRecord), required=True)
    author_affiliation_nicks = fields.List(fields.Nested(NickRecord), required=True)
    release_date = _partial_date(allow_none=True)
    supertype = _supertype()
    platforms = fields.List(fields.Nested(PlatformRecord), required=True)
    types = fields.List(fields.Nested(ProductionTypeRecord), required=True)
    tags = _tags()


# File order is load order: records referred to are known before those that refer.
RECORD_SCHEMAS = {
    "platforms": PlatformRecord(),
    "production_types": ProductionTypeRecord(),
    "releasers": ReleaserRecord(),
    "party_series": PartySeriesRecord(),
    "parties": PartyRecord(),
    "bbses": BBSRecord(),
    "productions": ProductionRecord(),
}
