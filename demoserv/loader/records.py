"""The lines of catalogue files, as marshmallow schemas that load (validate) them. Types
are strict: ``"12"`` is not an integer, ``1`` is not a boolean, partial dates must be
real calendar dates, and no text holds a NUL character. Each resource module declares
its record with these pieces.

A nested record that is a record of its own (a party, a production, a releaser, a
platform, a production type) may be given whole, as ``{"id": N}`` or as a bare id: it
loads as ``{"id": N, ...what was given}``. A relation that can be given from either side
loads as None when this side does not give it.
"""

import math

from marshmallow import EXCLUDE, Schema, ValidationError, fields, validate

from ..store.values import (
    INTEGER_RANGE,
    MAX_ID,
    MAX_TEXT,
    SUPERTYPES,
    TIMESTAMP_RANGE,
    partial_date_error,
    timestamp_key,
)


class StrictInteger(fields.Integer):
    """A JSON integer that SQLite can hold (``shared.INTEGER_RANGE``)."""

    def _validated(self, value):
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.make_error("invalid")
        if not INTEGER_RANGE[0] <= value <= INTEGER_RANGE[1]:
            raise ValidationError("out of range (a 64-bit integer).")
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


class Text(fields.String):
    def _deserialize(self, value, attr, data, **kwargs):
        text = super()._deserialize(value, attr, data, **kwargs)
        if "\x00" in text:
            raise ValidationError("contains a NUL character.")
        if len(text) > MAX_TEXT:
            raise ValidationError(f"too long (more than {MAX_TEXT} characters).")
        return text


def check_partial_date(value):
    error = partial_date_error(value)
    if error:
        raise ValidationError(error)


def check_timestamp(value):
    try:
        timestamp_key(value)
    except ValueError:
        raise ValidationError(
            f'"{value}" is not a date or date-time (ISO 8601) {TIMESTAMP_RANGE}.'
        ) from None


def record_id(**kwargs):
    return StrictInteger(validate=validate.Range(1, MAX_ID), **kwargs)


def id_field():
    return record_id(required=True)


def text(**kwargs):
    return Text(required=True, **kwargs)


def coordinate(limit):
    return StrictFloat(required=True, allow_none=True, validate=validate.Range(-limit, limit))


def supertype():
    return fields.String(required=True, validate=validate.OneOf(SUPERTYPES))


def tags():
    return fields.List(Text(), required=True)


def partial_date(**kwargs):
    kwargs.setdefault("required", "load_default" not in kwargs)
    return Text(validate=check_partial_date, **kwargs)


def timestamp():
    return Text(load_default=None, allow_none=True, validate=check_timestamp)


def country_code(**kwargs):
    return fields.String(
        validate=validate.Regexp(
            r"(?:[A-Z]{2})?\Z", error="must be two uppercase letters or empty."
        ),
        **kwargs,
    )


def optional_list(field):
    """A detail list: [] when absent."""
    return fields.List(field, load_default=list)


def relation(field):
    """One side of a relation shown from both sides: None when this side does not give it."""
    return fields.List(field, load_default=None)


class RecordSchema(Schema):
    class Meta:
        unknown = EXCLUDE  # url, service_url and fields of later versions are ignored


class Reference(fields.Field):
    """A record of its own, given whole, as ``{"id": N}`` or as a bare id; loads as a
    dict with at least ``id`` (and what ``schema`` reads of the rest)."""

    def __init__(self, schema=None, **kwargs):
        super().__init__(**kwargs)
        self.summary = schema

    def _deserialize(self, value, attr, data, **kwargs):
        if isinstance(value, int) and not isinstance(value, bool):
            value = {"id": value}
        if not isinstance(value, dict):
            raise ValidationError('expected a record, {"id": N} or an id.')
        if set(value) <= {"id"} or self.summary is None:
            return {"id": record_id(required=True).deserialize(value.get("id"))}
        return self.summary.load(value)


class PlatformRecord(RecordSchema):
    id = id_field()
    name = text()


class ProductionTypeRecord(RecordSchema):
    id = id_field()
    name = text()
    supertype = supertype()


class ReleaserSummaryRecord(RecordSchema):
    id = id_field()
    name = text()
    is_group = StrictBoolean(required=True)


class NickRecord(RecordSchema):
    name = text()
    abbreviation = text()
    releaser = fields.Nested(ReleaserSummaryRecord, required=True)


class LinkRecord(RecordSchema):
    link_class = text(validate=validate.Length(min=1))
    url = text()


class ResultRecord(RecordSchema):
    position = StrictInteger(required=True, allow_none=True)
    ranking = text()
    score = text()
    production = Reference(required=True)


class CompetitionRecord(RecordSchema):
    """A party's competition, as a party's record nests it."""

    id = id_field()
    name = text()
    shown_date = partial_date(allow_none=True, load_default=None)
    platform = Reference(PlatformRecord(), allow_none=True, load_default=None)
    production_type = Reference(ProductionTypeRecord(), allow_none=True, load_default=None)
    results = optional_list(fields.Nested(ResultRecord))
