"""Task states as people see them: the order to show them in and the color of each.

The browser view uses the same colors (`shared/ui/static/graph.css`), so a state looks the
same wherever it is shown.
"""

ORDER = ("unscheduled", "pending", "running", "completed", "failed", "exception")
RESOLVED = frozenset({"completed", "failed", "exception"})
COLORS = {"unscheduled": "grey62", "pending": "yellow", "running": "blue", "completed": "green",
          "failed": "red", "exception": "magenta"}


def counts_by_state(states) -> dict[str, int]:
    counts = dict.fromkeys(ORDER, 0)
    for state in states:
        counts[state] = counts.get(state, 0) + 1
    return counts
