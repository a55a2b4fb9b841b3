"""Scopes and scope expressions, with Taskcluster's meaning.

A scope is a string of printable ASCII. A scope a caller holds is a pattern: one ending in
`*` satisfies every scope that starts with what precedes the star (`queue:get-task:*`
satisfies `queue:get-task:abc`; `*` satisfies everything); any other satisfies only itself.
An expression is a scope, `{"AllOf": [...]}` (all of them; an empty list is always
satisfied) or `{"AnyOf": [...]}` (at least one; an empty list never is).
"""

from __future__ import annotations

import json
import re
from typing import Iterable

_PRINTABLE = re.compile(r"[\x20-\x7e]*")


def valid_scope(scope: object) -> bool:
    return isinstance(scope, str) and _PRINTABLE.fullmatch(scope) is not None


def normalize(scopes: Iterable[str]) -> tuple[str, ...]:
    """The same authority in its shortest form, sorted: duplicates dropped, and every scope
    another starred scope of the set already satisfies (`["q:*", "q:1"]` is `["q:*"]`)."""
    unique = set(scopes)
    prefixes: list[str] = []
    for starred in sorted((scope for scope in unique if scope.endswith("*")), key=len):
        if not starred.startswith(tuple(prefixes)):
            prefixes.append(starred[:-1])
    covering = tuple(prefixes)
    return tuple(sorted([prefix + "*" for prefix in prefixes]
                        + [scope for scope in unique if not scope.endswith("*") and not scope.startswith(covering)]))


class ScopeSet:
    """A caller's scopes, ready to answer whether they satisfy an expression."""

    __slots__ = ("scopes", "_exact", "_prefixes")

    def __init__(self, scopes: Iterable[str]) -> None:
        self.scopes = normalize(scopes)
        self._exact = frozenset(self.scopes)
        self._prefixes = tuple(scope[:-1] for scope in self.scopes if scope.endswith("*"))

    def __repr__(self) -> str:
        return f"ScopeSet({list(self.scopes)!r})"

    def has(self, scope: str) -> bool:
        return scope in self._exact or scope.startswith(self._prefixes)

    def satisfies(self, expression) -> bool:
        if isinstance(expression, str):
            return self.has(expression)
        if "AllOf" in expression:
            return all(self.satisfies(item) for item in expression["AllOf"])
        return any(self.satisfies(item) for item in expression["AnyOf"])

    def missing(self, expression):
        """What of `expression` these scopes leave unsatisfied, simplified; None if nothing
        (Taskcluster's `removeGivenScopes`, for error messages)."""
        if isinstance(expression, str):
            return None if self.has(expression) else expression
        if "AllOf" in expression:
            left = [part for part in (self.missing(item) for item in expression["AllOf"]) if part is not None]
            return None if not left else left[0] if len(left) == 1 else {"AllOf": left}
        parts = [self.missing(item) for item in expression["AnyOf"]]
        if any(part is None for part in parts):
            return None
        return parts[0] if len(parts) == 1 else {"AnyOf": parts}


def all_of(expressions: Iterable) -> dict:
    """`{"AllOf": expressions}` without repeats (a graph's tasks mostly require the same)."""
    seen, unique = set(), []
    for expression in expressions:
        key = expression if isinstance(expression, str) else json.dumps(expression, sort_keys=True)
        if key not in seen:
            seen.add(key)
            unique.append(expression)
    return {"AllOf": unique}
