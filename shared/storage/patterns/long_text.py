"""Text longer than one column may hold, kept in numbered columns of one row.

A string column holds 64 KiB of UTF-16, so 32,000 ASCII characters fit with room to spare;
a row holds 1 MiB in all, so the callers bound what they keep this way (a task definition,
a graph label's required taskIds).
"""

CHUNK = 32_000


def to_columns(name: str, text: str) -> dict:
    """`<name>Chunks` and `<name>0`, `<name>1`, ... holding `text`."""
    chunks = [text[i:i + CHUNK] for i in range(0, len(text), CHUNK)]
    return {f"{name}Chunks": len(chunks), **{f"{name}{i}": chunk for i, chunk in enumerate(chunks)}}


def from_columns(name: str, entity) -> str:
    return "".join(entity[f"{name}{i}"] for i in range(entity[f"{name}Chunks"]))
