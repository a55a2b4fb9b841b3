"""The ids people type are checked before any call, and a wrong one is explained in words."""

import argparse

import pytest
import taskcluster

from shared.domain.ids import SLUGID_PATTERN
from taskq.ids import SLUGID, slug_argument


def test_the_pattern_is_the_queues():
    """taskq installs without the Queue's code, so it keeps its own copy: the same one."""
    assert SLUGID.pattern == SLUGID_PATTERN
    assert all(slug_argument("taskId")(taskcluster.slugId()) for _ in range(1000))


@pytest.mark.parametrize("value, shape", [
    ("nope", "this is 4 characters"),
    ("my task/1", "this is 9 characters, some not letters, digits, '-' or '_'"),
    ("A" * 22, "22 characters of the right alphabet, but not a slugid Taskcluster makes"),
])
def test_a_wrong_id_says_what_an_id_is(value, shape):
    with pytest.raises(argparse.ArgumentTypeError) as refused:
        slug_argument("taskGroupId")(value)
    message = str(refused.value)
    assert message.startswith(f"{value!r} is not a taskGroupId: a taskGroupId is a slugid, 22 characters")
    assert message.endswith(shape) and "[A-Za-z" not in message
