"""The documentation cannot silently rot when files move: every relative link in README.md,
docs/*.md and bench/README.md leads to a file that exists (and to a heading that exists, when
it names one), and every path of this repository written in backticks in docs/*.md and
bench/README.md exists, down to the test functions named after `::`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINKED = [ROOT / "README.md", ROOT / "bench" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PATHS_CHECKED = [ROOT / "bench" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.MULTILINE | re.DOTALL)
LINK = re.compile(r"\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)
CODE = re.compile(r"`([^`\n]+)`")
# Folders of this repository whose paths the documents name.
TOP = ("shared", "tests", "bench", "devhost", "taskq", "taskq_worker", "infra", "deploy", "schemas", "docs")
REPO_PATH = re.compile(rf"^(?:{'|'.join(TOP)})/")


def prose(document: Path) -> str:
    """The document without its fenced code blocks (a `# comment` there is no heading)."""
    return FENCE.sub("", document.read_text())


def anchors(document: Path) -> set[str]:
    """The anchors GitHub gives the document's headings: the text as rendered (links as their
    text, no backticks), lower-cased, without punctuation, spaces as hyphens, repeats numbered."""
    seen: dict[str, int] = {}
    found = set()
    for heading in HEADING.findall(prose(document)):
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "")
        slug = re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def broken_links(document: Path) -> list[str]:
    broken = []
    for target in LINK.findall(prose(document)):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):   # https:, mailto: ...: not ours to check
            continue
        path, _, anchor = target.partition("#")
        linked = (document.parent / path).resolve() if path else document
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{target}: no such heading")
    return broken


def missing_paths(document: Path) -> list[str]:
    """Paths in backticks that do not exist. `path::test_name` needs the test function too
    (a final `*` a prefix of its name), and a lone `::test_name` refers to the last path named.
    Templates (`<...>`) are left alone; a path with `*` must match something."""
    missing, last_file = [], None
    for code in CODE.findall(prose(document)):
        if code.startswith("::") and last_file is not None:
            path, test = last_file, code[2:]
        elif REPO_PATH.match(code):
            path, _, test = code.partition("::")
            if "<" in path:
                continue
            if "*" in path:
                if not list(ROOT.glob(path)):
                    missing.append(code)
                continue
            if not (ROOT / path).exists():
                missing.append(code)
                continue
            last_file = path if path.endswith(".py") else None
        else:
            continue
        if test and not re.search(rf"^def {re.escape(test.rstrip('*'))}", (ROOT / path).read_text(), re.MULTILINE):
            missing.append(f"{path}::{test}")
    return missing


@pytest.mark.parametrize("document", LINKED, ids=lambda path: str(path.relative_to(ROOT)))
def test_every_relative_link_leads_to_a_file_and_heading_that_exist(document):
    assert broken_links(document) == []


@pytest.mark.parametrize("document", PATHS_CHECKED, ids=lambda path: str(path.relative_to(ROOT)))
def test_every_path_written_in_backticks_exists(document):
    assert missing_paths(document) == []


def test_the_checks_find_what_is_broken(tmp_path):
    """The checks themselves: a link to a missing file or heading, a moved module and a
    renamed test are each reported; what exists is not."""
    (tmp_path / "other.md").write_text("# A heading: `with code`\n\n## A heading: with code\n")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](other.md#a-heading-with-code) [second](other.md#a-heading-with-code-1) [gone](missing.md)\n"
        "[no heading](other.md#nowhere) [web](https://example.com/x.md) [self](#title)\n\n# Title\n\n"
        "`shared/config.py` `shared/no_such_module.py` `tests/test_docs.py::test_the_checks_find_what_is_broken`\n"
        "`::test_no_such_test` `tests/<same path>/test_<module>.py` `shared/storage/*/outbox.py`\n"
        "```sh\n# not a heading\n[in code](nowhere.md)\n```\n")
    assert broken_links(page) == ["missing.md: no such file", "other.md#nowhere: no such heading"]
    assert missing_paths(page) == ["shared/no_such_module.py", "tests/test_docs.py::test_no_such_test"]
