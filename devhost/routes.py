"""Azure Functions HTTP route templates: `items/{id}`, `{id?}`, `{*rest}`, `{id:int}`.

Templates are matched against the raw (percent-encoded) path, so an encoded '/' never
splits a segment. Route values are decoded except '%2F', which ASP.NET Core leaves
encoded; the app must not depend on either.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote

_PARAMETER = re.compile(r"^\{(\*?)([A-Za-z_][A-Za-z0-9_]*)(\?)?(?::([a-z]+))?\}$")
_CONSTRAINTS = {"int": re.compile(r"^-?[0-9]+$"), "alpha": re.compile(r"^[A-Za-z]+$"), None: re.compile(r"")}


@dataclass(frozen=True)
class Segment:
    literal: str | None = None
    name: str | None = None
    catch_all: bool = False
    optional: bool = False
    constraint: str | None = None


@dataclass(frozen=True)
class RouteTemplate:
    template: str
    segments: tuple[Segment, ...]

    @classmethod
    def parse(cls, template: str) -> RouteTemplate:
        segments = []
        for part in template.strip("/").split("/") if template.strip("/") else []:
            match = _PARAMETER.match(part)
            if match:
                star, name, optional, constraint = match.groups()
                segments.append(Segment(name=name, catch_all=bool(star), optional=bool(optional) or bool(star),
                                        constraint=constraint))
            else:
                segments.append(Segment(literal=part.lower()))
        return cls(template, tuple(segments))

    @property
    def precedence(self) -> tuple[int, int]:
        """More literal segments first, then fewer catch-alls (ASP.NET Core's order)."""
        literals = sum(1 for segment in self.segments if segment.literal is not None)
        catch_alls = sum(1 for segment in self.segments if segment.catch_all)
        return (-literals, catch_alls)

    def match(self, raw_path: str) -> dict[str, str] | None:
        raw = [part for part in raw_path.strip("/").split("/")] if raw_path.strip("/") else []
        values: dict[str, str] = {}
        for index, segment in enumerate(self.segments):
            if segment.catch_all:
                values[segment.name] = _decode("/".join(raw[index:]))
                return values
            if index >= len(raw):
                return values if all(s.optional for s in self.segments[index:]) else None
            if segment.literal is not None:
                if unquote(raw[index]).lower() != segment.literal:
                    return None
            else:
                value = _decode(raw[index])
                if not _CONSTRAINTS.get(segment.constraint, _CONSTRAINTS[None]).match(value):
                    return None
                values[segment.name] = value
        return values if len(raw) == len(self.segments) else None


def _decode(raw: str) -> str:
    return "%2F".join(unquote(piece) for piece in re.split("%2[Ff]", raw))
