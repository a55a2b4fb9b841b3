"""Filter parameters written as OData literals: a value can never change the query."""

import uuid
from datetime import datetime, timezone

import pytest
from azure.data.tables import EdmType, EntityProperty

from shared.storage.client.account import StorageAccount
from shared.storage.client.filters import literal, substitute
from tests.conftest import unique_prefix


@pytest.mark.parametrize("value, expected", [
    ("plain", "'plain'"), ("it's", "'it''s'"), ("''", "''''''"), ("", "''"), ("é~@x", "'é~@x'"),
    (True, "true"), (False, "false"), (0, "0"), (-2 ** 31, "-2147483648"), (2 ** 31, "2147483648L"),
    (0.5, "0.5"), (uuid.UUID(int=1), "guid'00000000-0000-0000-0000-000000000001'"), (b"\x00\xff", "X'00ff'"),
    (datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=timezone.utc), "datetime'2026-01-02T03:04:05.000006Z'")])
def test_values_are_written_as_odata_literals(value, expected):
    assert literal(value) == expected


def test_each_parameter_is_replaced_once_and_quoted_literals_are_left_alone():
    text = substitute("PartitionKey eq @pk and RowKey ne '@pk' and (n gt @n or tag eq @tag)",
                      {"pk": "a' or '1' eq '1", "n": 3, "tag": "@n"})
    assert text == "PartitionKey eq 'a'' or ''1'' eq ''1' and RowKey ne '@pk' and (n gt 3 or tag eq '@n')"


def test_a_parameter_next_to_a_parenthesis_or_at_the_end_is_replaced():
    assert substitute("(RowKey eq @a)", {"a": "x"}) == "(RowKey eq 'x')"
    assert substitute("RowKey ge @a", {"a": "x"}) == "RowKey ge 'x'"


def test_a_missing_parameter_is_named_and_no_parameters_leave_the_filter_as_it_is():
    with pytest.raises(KeyError, match="@end"):
        substitute("RowKey lt @end", {"start": "a"})
    assert substitute("RowKey lt @end", None) == "RowKey lt @end"
    with pytest.raises(ValueError):
        literal(float("nan"))


def test_keys_that_look_like_filters_find_exactly_their_row(azurite):
    """Against the Table service: each awkward key, given as a parameter, finds its own row."""
    table = StorageAccount(azurite.connection_string, unique_prefix()).table("Filters")
    keys = ["it's", "a' or RowKey ne '", "@pk", "x and y", "''", "é~%:"]
    for key in keys:
        table.upsert_entity({"PartitionKey": "p'q", "RowKey": key, "n": EntityProperty(2 ** 40 if key == "@pk" else 1, EdmType.INT64)})
    for key in keys:
        found = list(table.query_entities("PartitionKey eq @pk and RowKey eq @rk", parameters={"pk": "p'q", "rk": key}))
        assert [row["RowKey"] for row in found] == [key]
    big = list(table.query_entities("PartitionKey eq @pk and n gt @n", parameters={"pk": "p'q", "n": 2 ** 32}))
    assert [row["RowKey"] for row in big] == ["@pk"]
