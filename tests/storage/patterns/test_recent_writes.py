"""The rows a process remembers writing: bounded in number and in weight, oldest out first."""

from shared.storage.patterns.recent_writes import RecentWrites


def test_the_oldest_rows_go_past_the_size():
    recent = RecentWrites(size=3)
    for key in "abcd":
        recent.wrote(key, key.upper())
    assert [recent.get(key) for key in "abcd"] == [None, "B", "C", "D"]


def test_the_oldest_rows_go_past_the_weight_budget_and_a_rewrite_counts_once():
    recent = RecentWrites(size=100, weigh=len, budget=10)
    recent.wrote("a", "xxxx")
    recent.wrote("a", "xxxx")       # written again: its weight is not counted twice
    recent.wrote("b", "yyyy")
    assert (recent.get("a"), recent.get("b")) == ("xxxx", "yyyy")
    recent.wrote("c", "zzzz")       # 12 > 10: the oldest goes
    assert [recent.get(key) for key in "abc"] == [None, "yyyy", "zzzz"]
    recent.forget("b")
    recent.wrote("d", "wwwww")      # 4 + 5 fits once b's weight is given back
    assert [recent.get(key) for key in "bcd"] == [None, "zzzz", "wwwww"]


def test_a_row_heavier_than_the_budget_is_not_kept():
    recent = RecentWrites(size=100, weigh=len, budget=3)
    recent.wrote("a", "xxxx")
    assert recent.get("a") is None
