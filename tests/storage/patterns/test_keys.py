from hypothesis import given, strategies as st

from shared.storage.patterns.keys import MAX_BLOB_NAME, MAX_TEXT_IN_KEY, blob_name, bounded_key, escape_key, unescape_key

FORBIDDEN = set("/\\#?")


@given(st.text())
def test_escaping_round_trips_and_removes_forbidden_characters(text):
    escaped = escape_key(text)
    assert unescape_key(escaped) == text
    assert not FORBIDDEN & set(escaped)


printable = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7e), min_size=1, max_size=1200)


@given(printable, printable)
def test_bounded_keys_are_short_table_keys_and_tell_names_apart(first, second):
    keys = bounded_key(first), bounded_key(second)
    assert all(len(key) <= MAX_TEXT_IN_KEY and not FORBIDDEN & set(key) for key in keys)
    assert (keys[0] == keys[1]) == (first == second)


def test_a_short_name_is_its_escaped_self():
    assert bounded_key("public/logs/live.log") == "public%2Flogs%2Flive.log"


@given(printable, printable)
def test_blob_names_keep_slashes_avoid_dot_and_empty_segments_and_tell_names_apart(first, second):
    names = blob_name(first), blob_name(second)
    for name in names:
        assert len(name) <= MAX_BLOB_NAME and "\\" not in name
        assert not any(segment in ("", ".", "..") or segment.endswith(".") for segment in name.split("/"))
    assert (names[0] == names[1]) == (first == second)


def test_a_plain_name_is_its_own_blob_name():
    assert blob_name("t/abc/0/public/logs/live.log") == "t/abc/0/public/logs/live.log"
    assert blob_name("t/abc/0/../x./") == "t/abc/0/..~/x.~/~"
