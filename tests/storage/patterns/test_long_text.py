"""Text kept in numbered columns: split at the column limit and joined back whole."""

from shared.storage.patterns.long_text import CHUNK, from_columns, to_columns


def test_text_is_split_at_the_column_limit_and_joined_back():
    text = "é" + "x" * (2 * CHUNK + 5)
    columns = to_columns("requires", text)
    assert columns["requiresChunks"] == 3
    assert [len(columns[f"requires{i}"]) for i in range(3)] == [CHUNK, CHUNK, 6]
    assert from_columns("requires", columns) == text


def test_empty_text_has_no_chunk():
    assert to_columns("definition", "") == {"definitionChunks": 0}
    assert from_columns("definition", {"definitionChunks": 0}) == ""
