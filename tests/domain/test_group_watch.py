"""The watchdog's verdicts and when it looks again: pure rules, no storage."""

from datetime import datetime, timedelta, timezone

from hypothesis import given, strategies as st

from shared.domain.group_watch import (MAX_LISTED, NO_WORKERS, REPAIRED, STALLED, ItemNote, Verdict, finding, judge, next_look,
                                       view)

STALL = timedelta(minutes=10)
QUIET = datetime(2026, 11, 27, 12, 0, tzinfo=timezone.utc)


def test_a_repair_comes_first_then_missing_workers_then_a_live_run_keeps_a_group_healthy():
    assert judge(repaired=True, no_workers=True, live_runs=0) == REPAIRED
    assert judge(repaired=False, no_workers=True, live_runs=3) == NO_WORKERS
    assert judge(repaired=False, no_workers=False, live_runs=1) is None
    assert judge(repaired=False, no_workers=False, live_runs=0) == STALLED


def test_a_quiet_group_is_looked_at_less_and_less_often():
    looks, now = [], QUIET
    for _ in range(7):
        now = next_look(QUIET, now, STALL)
        looks.append((now - QUIET) / STALL)
    assert looks == [1, 2, 4, 8, 16, 24, 32]


@given(st.floats(min_value=0, max_value=500), st.floats(min_value=0, max_value=500))
def test_two_looks_between_the_same_two_points_push_the_group_to_one_item(first, second):
    """Duplicated index items of a group converge: whichever is looked at, the next item is
    the first grid point after now, so two looked at before that point coincide."""
    a, b = sorted((QUIET + STALL * first, QUIET + STALL * second))
    next_a = next_look(QUIET, a, STALL)
    assert next_a > a
    if b < next_a:
        assert next_look(QUIET, b, STALL) == next_a


def test_a_verdict_is_the_same_whenever_it_was_reported_and_lists_few_task_ids():
    found = finding("scheduled", [f"t{i:03d}" for i in range(50)])
    assert found["count"] == 50 and len(found["taskIds"]) == MAX_LISTED
    verdict = Verdict(STALLED, {"pending": 2, "resolved": 1}, "2026-11-27T12:00:00.000Z", (found,), "then")
    again = Verdict.decode(Verdict(**{**verdict.__dict__, "reported": "later"}).encode())
    assert again == verdict and again.reported == "later"
    assert Verdict.decode("") is None


def test_the_view_says_ok_without_a_verdict():
    assert view("g", "s", "", STALL, None) == {"taskGroupId": "g", "schedulerId": "s", "onStall": "report",
                                               "stallAfterSeconds": 600, "state": "ok", "findings": []}
    shown = view("g", "s", "cancel", STALL, Verdict(NO_WORKERS, {"pending": 1}, "x", (), "y"))
    assert (shown["state"], shown["since"], shown["reportedAt"], shown["onStall"]) == (NO_WORKERS, "x", "y", "cancel")


seconds = st.frozensets(st.datetimes(min_value=datetime(2026, 1, 1), max_value=datetime(2030, 1, 1)).map(
    lambda moment: moment.replace(microsecond=0, tzinfo=timezone.utc).isoformat().replace("+00:00", ".000Z")),
    max_size=3)


@given(st.booleans(), seconds, st.booleans(), st.booleans(), seconds, st.booleans())
def test_an_item_note_reads_back_as_written_and_two_notes_keep_everything_either_said(
        verdict, deadlines, lone, other_verdict, others, other_lone):
    note = ItemNote(verdict, deadlines, lone)
    assert ItemNote.parse(note.text()) == note
    merged = ItemNote.parse(note.text()).merged(ItemNote(other_verdict, others, other_lone))
    assert merged == ItemNote(verdict or other_verdict, deadlines | others, lone or other_lone)


def test_an_item_written_before_deadlines_were_carried_reads_as_it_did():
    assert ItemNote.parse("verdict") == ItemNote(True) and ItemNote.parse("") == ItemNote()
    assert ItemNote().text() == ""
