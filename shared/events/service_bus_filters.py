"""AMQP topic bindings on Service Bus: the properties a message carries, and the filter a
binding pattern compiles to. Both halves of that contract live here, so they change together.

Service Bus has no topic exchange: a subscription's rules select messages by their
properties. So every message carries its routing key cut into words (`routing_properties`):

    routingKey   the key itself                words   how many words it has (an int)
    w0, w1, ...  its words from the start      r0, r1, ...  its words from the end (r0 = last)

(only the first and the last `MAX_WORDS` words: a header holds 64 KB of properties at most).

A binding pattern (`*` one word, `#` zero or more, as in AMQP) compiles to (`binding_filters`):
- without `#`: a correlation filter, `words` = the pattern's length and `w<i>` = each literal.
  Correlation filters are hash lookups, and a topic takes 100,000 of them (SQL: 2,000).
- with one `#`: a SQL filter. The words before it are anchored on `w<i>`, those after it on
  `r<j>`, and `words>=` the number of the other words keeps the two ends from overlapping
  (left out where a `w<i>` or `r<i>` test implies it):
  `primary.*.*.*.*.prov.#` -> `w0='primary' AND w5='prov'`, `a.#.b` -> `words>=2 AND w0='a' AND r0='b'`.
- with several `#`: the same, and the segments between two `#` float: the filter ORs over
  every place they can take among the first `MAX_WORDS` words, each with the `words>=` it
  needs (`#.a.#` -> `(w0='a' OR w1='a' OR ... OR w31='a')`).

Bounds (Service Bus's quotas, and the 32 words we chose to carry):
- a pattern has at most `MAX_WORDS` (32) words besides `#` (PatternTooComplex beyond);
- every pattern matches exactly what AMQP matches for keys of up to 32 words, and patterns with
  at most one `#` for keys of any length; with several `#`, a floating segment of a longer key
  is found only if its literal words are among the key's first 32 words;
- a SQL filter is at most 1,024 characters: an OR longer than that is split over several
  filters, which `ensure_subscription` makes several rules of a subscription (rules without
  actions are ORed, and a message matching several is delivered once). A pattern may take up
  to `MAX_FILTERS` (32) of its topic's 2,000 SQL filters: one floating segment takes one or
  two, two floating segments of short words some twenty (`#.a.b.#.c.d.#`: 22), and three are
  too many (`PatternTooComplex`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Iterator

if TYPE_CHECKING:     # the SDK is imported when a filter is made, not with this module
    from azure.servicebus.management import CorrelationRuleFilter, SqlRuleFilter

MAX_WORDS = 32
MAX_SQL_LENGTH = 1024    # Service Bus: "maximum length of filter condition string"
MAX_FILTERS = 32

class PatternTooComplex(ValueError):
    """The pattern's filter would exceed Service Bus's limits (see the module's bounds)."""


def routing_properties(routing_key: str) -> dict[str, str | int]:
    """The application properties a message published under `routing_key` carries."""
    words = routing_key.split(".")
    properties: dict[str, str | int] = {"routingKey": routing_key, "words": len(words)}
    properties.update((f"w{index}", word) for index, word in enumerate(words[:MAX_WORDS]))
    properties.update((f"r{index}", word) for index, word in enumerate(reversed(words[-MAX_WORDS:])))
    return properties


def binding_filter(pattern: str) -> CorrelationRuleFilter | SqlRuleFilter:
    """The one filter of `pattern`; PatternTooComplex if it takes several (see binding_filters)."""
    filters = binding_filters(pattern)
    if len(filters) > 1:
        raise PatternTooComplex(f"{pattern!r} takes {len(filters)} filters of {MAX_SQL_LENGTH} characters")
    return filters[0]


def binding_filters(pattern: str) -> list[CorrelationRuleFilter | SqlRuleFilter]:
    """The filters whose OR selects exactly the messages AMQP routes to a binding on `pattern`."""
    from azure.servicebus.management import CorrelationRuleFilter, SqlRuleFilter, TrueRuleFilter

    words = _parse(pattern)
    if "#" not in words:
        return [CorrelationRuleFilter(properties=_correlation_properties(words))]
    return [SqlRuleFilter(expression) if expression else TrueRuleFilter() for expression in _sql(words)]


def _parse(pattern: str) -> list[str]:
    if not pattern:
        raise ValueError("an empty binding pattern")
    words = pattern.split(".")
    if sum(word != "#" for word in words) > MAX_WORDS:
        raise PatternTooComplex(f"{pattern!r} has more than {MAX_WORDS} words besides '#'")
    return words


def _correlation_properties(words: list[str]) -> dict[str, str | int]:
    # `words` is an int on both sides: the SDK sends small ints as AMQP int and writes them
    # into a correlation filter as xs:int, and a correlation filter compares type and value.
    properties: dict[str, str | int] = {"words": len(words)}
    properties.update((f"w{index}", word) for index, word in enumerate(words) if word != "*")
    return properties


def _sql(words: list[str]) -> list[str]:
    """The SQL expressions (each within MAX_SQL_LENGTH) of a pattern with at least one `#`;
    an empty expression stands for 'always true' (`#`)."""
    segments = _split_on_hash(words)
    head, middles, tail = segments[0], segments[1:-1], segments[-1]
    head_tests = [(f"w{index}", word) for index, word in enumerate(head) if word != "*"]
    tail_tests = [(f"r{index}", word) for index, word in enumerate(reversed(tail)) if word != "*"]
    anchors = [f"{name}={_quote(word)}" for name, word in head_tests + tail_tests]
    # Testing w<i> or r<i> already needs i + 1 words, and every key has one at least: say
    # `words>=` only when the pattern needs more.
    floor = max([1] + [int(name[1:]) + 1 for name, _ in head_tests + tail_tests])
    fixed = len(words) - words.count("#")
    if fixed > floor:
        anchors.insert(0, f"words>={fixed}")
    floating, trailing_gap = _floating(middles)
    if not floating:
        return [" AND ".join(anchors)]
    return _pack(anchors, _choices(len(head), floating, trailing_gap + len(tail), max(fixed, floor)))


def _split_on_hash(words: list[str]) -> list[list[str]]:
    segments: list[list[str]] = [[]]
    for word in words:
        if word == "#":
            segments.append([])
        else:
            segments[-1].append(word)
    return segments


def _floating(middles: list[list[str]]) -> tuple[list[tuple[int, list[str]]], int]:
    """The middle segments with a literal word, each with the number of words that must come
    before it (the all-`*` segments since the previous one: they only take room, anywhere in
    between), and the room the all-`*` segments after the last one take."""
    floating, gap = [], 0
    for segment in middles:
        if all(word == "*" for word in segment):
            gap += len(segment)
        else:
            floating.append((gap, segment))
            gap = 0
    return floating, gap


def _choices(start: int, floating: list[tuple[int, list[str]]], after: int, floor: int) -> Iterator[str]:
    """One conjunction for every placement of the floating segments (in order, apart, from
    position `start` on, literal words within the first MAX_WORDS words); `after` words must
    follow the last one, and the anchors already ask for `floor` words."""
    for placement in _placements(start, floating):
        literals = [(offset + index, word) for offset, segment in placement
                    for index, word in enumerate(segment) if word != "*"]
        terms = [f"w{index}={_quote(word)}" for index, word in literals]
        last_offset, last_segment = placement[-1]
        needed = last_offset + len(last_segment) + after
        if needed > max(floor, literals[-1][0] + 1):   # literals come in order
            terms.append(f"words>={needed}")
        yield terms[0] if len(terms) == 1 else f"({' AND '.join(terms)})"


def _placements(start: int, floating: list[tuple[int, list[str]]]) -> Iterator[list[tuple[int, list[str]]]]:
    (gap, segment), rest = floating[0], floating[1:]
    last_literal = max(index for index, word in enumerate(segment) if word != "*")
    for offset in range(start + gap, MAX_WORDS - last_literal):
        if not rest:
            yield [(offset, segment)]
            continue
        for more in _placements(offset + len(segment), rest):
            yield [(offset, segment)] + more


def _pack(anchors: list[str], choices: Iterable[str]) -> list[str]:
    """`anchors AND (choice OR choice ...)`, the choices spread over as few expressions of at
    most MAX_SQL_LENGTH characters as they fit in, at most MAX_FILTERS of them."""
    prefix = "".join(f"{anchor} AND " for anchor in anchors) + "("
    expressions, group, length = [], [], len(prefix) + 1
    for choice in choices:
        if group and length + len(" OR ") + len(choice) > MAX_SQL_LENGTH:
            expressions.append(prefix + " OR ".join(group) + ")")
            group, length = [], len(prefix) + 1
            if len(expressions) == MAX_FILTERS:
                raise PatternTooComplex(f"the pattern takes more than {MAX_FILTERS} SQL filters")
        length += (len(" OR ") if group else 0) + len(choice)
        if length > MAX_SQL_LENGTH:
            raise PatternTooComplex(f"one placement of the pattern alone is over {MAX_SQL_LENGTH} characters")
        group.append(choice)
    if not group:
        raise PatternTooComplex(f"the pattern's literal words cannot all be among the first {MAX_WORDS}")
    return expressions + [prefix + " OR ".join(group) + ")"]


def _quote(word: str) -> str:
    return "'" + word.replace("'", "''") + "'"
