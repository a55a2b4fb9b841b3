"""OData filters with `@name` parameters, as the Table service's `$filter` takes them.

The adapters write their filters with parameters (`PartitionKey eq @pk and RowKey lt @end`)
so that no value is ever pasted into a filter by hand: each `@name` outside a quoted literal
is replaced by its value written as an OData literal, a string's quotes doubled, so that a
key holding a quote, an `@`, ` and ` or ` or ` stays one value and cannot change the query.
"""

from __future__ import annotations

import math
import re
import uuid
from datetime import datetime, timezone

_TOKEN = re.compile(r"'(?:[^']|'')*'|@([A-Za-z_][A-Za-z0-9_]*)")
_INT32 = range(-2 ** 31, 2 ** 31)


def substitute(query_filter: str, parameters: dict | None) -> str:
    """`query_filter` with each `@name` (outside a quoted literal) replaced by the literal of
    `parameters[name]`; KeyError naming a parameter not given."""
    if not parameters:
        return query_filter

    def replace(match: re.Match) -> str:
        name = match.group(1)
        if name is None:
            return match.group(0)   # a quoted literal of the filter itself, left as it is
        if name not in parameters:
            raise KeyError(f"the filter names @{name}, which no parameter gives")
        return literal(parameters[name])
    return _TOKEN.sub(replace, query_filter)


def literal(value) -> str:
    """A value as an OData literal of its Edm type."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value) if value in _INT32 else f"{value}L"
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value} has no OData literal")
        return repr(value)
    if isinstance(value, datetime):
        utc = value.astimezone(timezone.utc) if value.tzinfo else value
        return f"datetime'{utc.strftime('%Y-%m-%dT%H:%M:%S.%fZ')}'"
    if isinstance(value, uuid.UUID):
        return f"guid'{value}'"
    if isinstance(value, bytes):
        return f"X'{value.hex()}'"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    raise TypeError(f"a {type(value).__name__} has no OData literal")
