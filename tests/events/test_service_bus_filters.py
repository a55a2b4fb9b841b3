"""AMQP binding patterns compiled to Service Bus filters: the filters of typical patterns, the
bounds, and the property that matters: evaluated on a message's properties the way Service Bus
evaluates them (a small evaluator below), the compiled filters match exactly what AMQP's topic
matching matches (a reference matcher below)."""

import re
from itertools import product
from functools import lru_cache

import pytest
from azure.servicebus.management import CorrelationRuleFilter, SqlRuleFilter, TrueRuleFilter
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.events.service_bus_filters import (MAX_SQL_LENGTH, MAX_WORDS, PatternTooComplex, binding_filter,
                                               binding_filters, routing_properties)


# The reference: AMQP 0-9-1 topic matching (`*` exactly one word, `#` zero or more).

def amqp_matches(pattern: str, routing_key: str) -> bool:
    return _matches(tuple(pattern.split(".")), tuple(routing_key.split(".")))


@lru_cache(maxsize=None)
def _matches(pattern: tuple, words: tuple) -> bool:
    if not pattern:
        return not words
    first, rest = pattern[0], pattern[1:]
    if first == "#":
        return any(_matches(rest, words[skip:]) for skip in range(len(words) + 1))
    return bool(words) and first in ("*", words[0]) and _matches(rest, words[1:])


# The evaluator: correlation filters compare properties for equality; SQL filters are parsed
# and evaluated, for the subset of Service Bus's SQL the compiler emits (`=`, `>=`, AND, OR,
# parentheses, property names, string and integer literals) and nothing else. A missing
# property makes a comparison unknown; with no NOT in that subset, unknown acts as false.

TOKEN = re.compile(r"\s*(?:(?P<string>'(?:[^']|'')*')|(?P<number>\d+)|(?P<symbol>>=|=|\(|\))|(?P<name>[A-Za-z]\w*))")


def tokens(sql: str) -> list[tuple[str, object]]:
    found, position = [], 0
    while position < len(sql):
        match = TOKEN.match(sql, position)
        assert match and match.end() > position, f"not in the subset: {sql[position:position + 40]!r}"
        kind = match.lastgroup
        text = match.group(kind)
        value = {"string": lambda: text[1:-1].replace("''", "'"), "number": lambda: int(text)}.get(kind, lambda: text)()
        found.append((kind, value))
        position = match.end()
    return found


class Parser:
    def __init__(self, sql: str):
        self.tokens, self.position = tokens(sql), 0

    def parse(self):
        tree = self.disjunction()
        assert self.position == len(self.tokens), "trailing tokens"
        return tree

    def disjunction(self):
        terms = [self.conjunction()]
        while self.accept("name", "OR"):
            terms.append(self.conjunction())
        return ("or", terms)

    def conjunction(self):
        terms = [self.comparison()]
        while self.accept("name", "AND"):
            terms.append(self.comparison())
        return ("and", terms)

    def comparison(self):
        if self.accept("symbol", "("):
            tree = self.disjunction()
            assert self.accept("symbol", ")"), "unbalanced parentheses"
            return tree
        left = self.operand()
        kind, operator = self.tokens[self.position]
        assert kind == "symbol" and operator in ("=", ">="), operator
        self.position += 1
        return (operator, left, self.operand())

    def operand(self):
        kind, value = self.tokens[self.position]
        assert kind in ("string", "number", "name") and value not in ("AND", "OR"), value
        self.position += 1
        return ("property", value) if kind == "name" else ("literal", value)

    def accept(self, kind, value) -> bool:
        if self.position < len(self.tokens) and self.tokens[self.position] == (kind, value):
            self.position += 1
            return True
        return False


def evaluate(tree, properties: dict) -> bool:
    operator = tree[0]
    if operator == "or":
        return any(evaluate(term, properties) for term in tree[1])
    if operator == "and":
        return all(evaluate(term, properties) for term in tree[1])
    left, right = (properties.get(value) if kind == "property" else value for kind, value in tree[1:])
    if left is None or right is None:
        return False
    assert type(left) is type(right), (left, right)
    return left == right if operator == "=" else left >= right


def evaluator(rule_filter):
    """A function of a message's properties: does the filter select it?"""
    if isinstance(rule_filter, SqlRuleFilter):
        assert not rule_filter.parameters
        assert len(rule_filter.sql_expression) <= MAX_SQL_LENGTH
        tree = Parser(rule_filter.sql_expression).parse()
        return lambda properties: evaluate(tree, properties)
    assert isinstance(rule_filter, CorrelationRuleFilter)
    assert not any([rule_filter.correlation_id, rule_filter.message_id, rule_filter.to, rule_filter.reply_to,
                    rule_filter.label, rule_filter.session_id, rule_filter.reply_to_session_id,
                    rule_filter.content_type])
    wanted = rule_filter.properties
    return lambda properties: all(type(properties.get(name)) is type(value) and properties[name] == value
                                  for name, value in wanted.items())


def subscription(pattern: str):
    """Does a subscription with the pattern's rules (ORed) receive a message with this key?"""
    tests = [evaluator(rule_filter) for rule_filter in binding_filters(pattern)]
    return lambda routing_key: any(test(routing_properties(routing_key)) for test in tests)


# The evaluator and the matcher themselves, on cases worked out by hand.

def test_the_reference_matcher_is_amqps():
    assert amqp_matches("primary.#", "primary") and amqp_matches("#", "a.b") and amqp_matches("a.#.b", "a.b")
    assert amqp_matches("#.a.#", "x.a") and amqp_matches("*.*", "a.b") and not amqp_matches("*.*", "a")
    assert not amqp_matches("a.#.b", "a") and not amqp_matches("a.*", "a.b.c") and amqp_matches("#.#", "a")


def test_the_evaluator_follows_sql():
    properties = {"w0": "it's", "words": 3}
    assert evaluate(Parser("w0='it''s' AND words>=3").parse(), properties)
    assert not evaluate(Parser("w0='a' AND words>=3 OR w9='x'").parse(), properties)
    assert evaluate(Parser("w0='a' AND words>=3 OR words>=2").parse(), properties)   # AND binds tighter
    assert not evaluate(Parser("w0='a' AND (words>=3 OR words>=2)").parse(), properties)
    with pytest.raises(AssertionError):
        Parser("w0 LIKE 'a%'").parse()


# Typical patterns.

def sql(pattern: str) -> str:
    rule_filter = binding_filter(pattern)
    assert isinstance(rule_filter, SqlRuleFilter)
    return rule_filter.sql_expression


def test_patterns_without_hash_are_correlation_filters_on_the_word_count_and_literals():
    assert binding_filter("*.*").properties == {"words": 2}
    assert binding_filter("primary.TASK.*.*.*.*.*.*.*._").properties == {"words": 10, "w0": "primary",
                                                                         "w1": "TASK", "w9": "_"}


@pytest.mark.parametrize("pattern, expression", [
    ("primary.#", "w0='primary'"),
    ("primary.*.*.*.*.prov.#", "w0='primary' AND w5='prov'"),
    ("primary.*.*.wg.wid.#", "w0='primary' AND w3='wg' AND w4='wid'"),
    ("route.index.#", "w0='route' AND w1='index'"),
    ("*.*.#", "words>=2"),
    ("a.#.b", "words>=2 AND w0='a' AND r0='b'"),
    ("#.x.y", "r0='y' AND r1='x'"),
    ("it's.#", "w0='it''s'"),
    ("#.a.#", "(" + " OR ".join(f"w{index}='a'" for index in range(MAX_WORDS)) + ")"),
])
def test_patterns_with_hash_are_sql_filters_anchored_at_both_ends(pattern, expression):
    assert sql(pattern) == expression


def test_a_hash_alone_matches_everything():
    assert isinstance(binding_filter("#"), TrueRuleFilter) and isinstance(binding_filter("*.#"), TrueRuleFilter)


def test_a_floating_segment_is_kept_clear_of_both_ends():
    expression = sql("x.#.a.*.#.y")
    assert expression.startswith("words>=4 AND w0='x' AND r0='y' AND (w1='a' OR (w2='a' AND words>=5) OR ")
    matches = subscription("x.#.a.*.#.y")
    assert matches("x.a.b.y") and matches("x.c.a.b.y") and not matches("x.a.y") and not matches("x.c.a.y")


def test_two_floating_segments_are_spread_over_several_filters():
    filters = binding_filters("#.a.#.b.#")
    assert len(filters) > 1 and all(len(rule_filter.sql_expression) <= MAX_SQL_LENGTH for rule_filter in filters)
    with pytest.raises(PatternTooComplex):
        binding_filter("#.a.#.b.#")
    matches = subscription("#.a.#.b.#")
    assert matches("a.b") and matches("c.a.c.c.b.c") and not matches("b.a")
    assert matches(".".join(["c"] * 29 + ["a", "c", "b"]))      # the last placement, in the last filter


# Bounds.

def test_a_pattern_has_at_most_32_words_besides_hash():
    assert binding_filter(".".join(["*"] * MAX_WORDS)).properties == {"words": MAX_WORDS}
    assert sql(".".join(["#"] + ["*"] * MAX_WORDS + ["#"])) == f"words>={MAX_WORDS}"
    for pattern in [".".join(["*"] * (MAX_WORDS + 1)), ".".join(["a"] * MAX_WORDS + ["#.b.#"])]:
        with pytest.raises(PatternTooComplex):
            binding_filters(pattern)
    with pytest.raises(ValueError):
        binding_filters("")


def test_a_long_or_is_split_within_the_sql_limit():
    word = "w" * 40
    filters = binding_filters(f"#.{word}.#")
    assert len(filters) == 2 and all(len(rule_filter.sql_expression) <= MAX_SQL_LENGTH for rule_filter in filters)
    assert subscription(f"#.{word}.#")(".".join(["c"] * 31 + [word]))


def test_three_floating_segments_are_too_complex():
    with pytest.raises(PatternTooComplex):
        binding_filters("#.a.#.b.#.c.#")


def test_keys_longer_than_32_words():
    key = ".".join(f"k{index}" for index in range(40))
    assert subscription("k0.#.k39")(key) and subscription("#.k8.*.k10.#.k39")(key)
    assert subscription("#.k31.#")(key)
    assert not subscription("#.k32.#")(key)          # the documented bound: amqp_matches says True
    assert amqp_matches("#.k32.#", key)


# The property: for any pattern and key, the compiled filters agree with AMQP.

LITERALS = ["a", "b", "it's"]
WORDS = st.sampled_from(LITERALS + ["*"])
# Free sequences of words, and segments of words joined by `#` (several `#`, floating segments).
patterns = st.one_of(
    st.lists(st.sampled_from(LITERALS + ["*", "#"]), min_size=1, max_size=8).map(".".join),
    st.lists(st.lists(WORDS, max_size=3).map(".".join), min_size=2, max_size=4).map(".#.".join)
    .map(lambda pattern: pattern.strip(".").replace("..", ".")),
)
keys = st.lists(st.sampled_from(LITERALS + ["c"]), min_size=1, max_size=12).map(".".join)


@st.composite
def instances(draw, pattern: str) -> str:
    """A key the pattern matches (when it has a word at all): random keys rarely do."""
    words = []
    for word in pattern.split("."):
        if word == "*":
            words.append(draw(st.sampled_from(LITERALS + ["c"])))
        elif word == "#":
            words.extend(draw(st.lists(st.sampled_from(LITERALS + ["c"]), max_size=3)))
        else:
            words.append(word)
    return ".".join(words or ["c"])


@st.composite
def near_misses(draw, pattern: str) -> str:
    """A key the pattern matches with a word dropped, added or changed: where filters go wrong."""
    words = draw(instances(pattern)).split(".")
    where = draw(st.integers(0, len(words) - 1))
    word = draw(st.sampled_from(LITERALS + ["c"]))
    change = draw(st.sampled_from(["drop", "add", "change"]))
    if change == "drop" and len(words) > 1:
        del words[where]
    elif change == "add":
        words.insert(where + draw(st.integers(0, 1)), word)
    else:
        words[where] = word
    return ".".join(words)


def floating_segments(pattern: str) -> int:
    middles = pattern.split("#")[1:-1]
    return sum(any(word not in ("", "*") for word in middle.split(".")) for middle in middles)


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_compiled_filters_match_exactly_what_amqp_matches(data):
    pattern = data.draw(patterns, label="pattern")
    try:
        matches = subscription(pattern)
    except PatternTooComplex:
        assert floating_segments(pattern) >= 2
        return
    candidates = st.one_of(keys, instances(pattern), near_misses(pattern))
    for key in data.draw(st.lists(candidates, min_size=1, max_size=8), label="keys"):
        assert matches(key) == amqp_matches(pattern, key), key


@settings(max_examples=100, deadline=None)
@given(pattern=patterns.filter(lambda pattern: pattern.count("#") <= 1),
       key=st.lists(st.sampled_from(LITERALS + ["c"]), min_size=MAX_WORDS + 1, max_size=45).map(".".join))
def test_patterns_with_one_hash_at_most_are_exact_for_keys_of_any_length(pattern, key):
    assert subscription(pattern)(key) == amqp_matches(pattern, key)


def test_every_short_pattern_agrees_with_amqp_on_every_short_key():
    # Random patterns rarely come with the near miss that shows a wrong bound, such as
    # `#.a.#.a.#` and `a.b`; all patterns of up to 5 words over {a, b, *, #} and all keys of up
    # to 5 words over {a, b} do.
    short_keys = [".".join(words) for length in range(1, 6) for words in product("ab", repeat=length)]
    for length in range(1, 6):
        for words in product(["a", "b", "*", "#"], repeat=length):
            pattern = ".".join(words)
            matches = subscription(pattern)
            wrong = [key for key in short_keys if matches(key) != amqp_matches(pattern, key)]
            assert not wrong, (pattern, wrong)
