from hypothesis import given, strategies as st

from shared.storage.keys import escape_key, unescape_key

FORBIDDEN = set("/\\#?")


@given(st.text())
def test_escaping_round_trips_and_removes_forbidden_characters(text):
    escaped = escape_key(text)
    assert unescape_key(escaped) == text
    assert not FORBIDDEN & set(escaped)
