"""The zip `func azure functionapp publish` uploads, built as Azure Functions Core Tools builds it.

Core Tools (Python, remote build, the default for Linux plans) zips the app folder as it is:
every file except those `.funcignore` names (gitignore syntax) and a few it always leaves
out. Azure then installs `requirements.txt` into the app. Core Tools cannot run here, so
this module makes the same zip, and `tests/deploy/test_package.py` proves the app imports
from it alone.

    python -m deploy.package [--app-dir .] [--output dist/app.zip]
"""

from __future__ import annotations

import argparse
import sys
import zipfile
from pathlib import Path

import pathspec

# What Core Tools leaves out whatever .funcignore says.
ALWAYS_IGNORED_DIRECTORIES = {".git", ".vscode"}
ALWAYS_IGNORED_FILES = {".funcignore", ".gitignore", "local.settings.json", "project.lock.json"}
# What the app cannot start without; the layout library is built, not kept in git (`make ui`).
REQUIRED = ("function_app.py", "host.json", "requirements.txt")
BUILT = {"shared/ui/static/vendor/dagre.min.js": "make ui"}


def ignore_rules(app_dir: Path) -> pathspec.GitIgnoreSpec:
    funcignore = app_dir / ".funcignore"
    lines = funcignore.read_text().splitlines() if funcignore.exists() else []
    return pathspec.GitIgnoreSpec.from_lines(lines)


def package_files(app_dir: Path) -> list[Path]:
    """The files of the package, relative to `app_dir`, in a stable order."""
    rules = ignore_rules(app_dir)
    chosen = []
    for path in sorted(app_dir.rglob("*")):
        relative = path.relative_to(app_dir)
        if not path.is_file() or _always_ignored(relative):
            continue
        if rules.match_file(relative.as_posix()):
            continue
        chosen.append(relative)
    return chosen


def _always_ignored(relative: Path) -> bool:
    return bool(ALWAYS_IGNORED_DIRECTORIES & set(relative.parts[:-1])) or relative.name in ALWAYS_IGNORED_FILES


def build(app_dir: Path, output: Path) -> list[Path]:
    """Write the zip (paths relative to the app folder, as Core Tools does) and return its files."""
    files = package_files(app_dir)
    missing = [name for name in REQUIRED if Path(name) not in files]
    if missing:
        raise SystemExit(f"error: the package would lack {', '.join(missing)}; check .funcignore")
    # A built file is needed where the app has the folder that serves it.
    unbuilt = [f"{name} (run `{step}`)" for name, step in BUILT.items()
               if (app_dir / name).parent.parent.is_dir() and Path(name) not in files]
    if unbuilt:
        raise SystemExit(f"error: the package would lack {', '.join(unbuilt)}")
    output.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(output, "w", zipfile.ZIP_DEFLATED) as archive:
        for relative in files:
            archive.write(app_dir / relative, relative.as_posix())
    return files


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m deploy.package", description=__doc__.splitlines()[0])
    parser.add_argument("--app-dir", default=".", type=Path)
    parser.add_argument("--output", default=Path("dist/app.zip"), type=Path)
    args = parser.parse_args()
    files = build(args.app_dir.resolve(), args.output)
    print(f"{args.output}: {len(files)} files, {args.output.stat().st_size:,} bytes", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
