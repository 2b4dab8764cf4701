"""The manual (README.md and docs/) hangs together: every relative link resolves, no chapter is a dated log."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
LOG_HEADING = re.compile(r"^#+ .*(\bsessions?\b|\brounds?\b|\b20\d\d-\d\d-\d\d\b)", re.IGNORECASE)


def test_every_relative_link_resolves() -> None:
    """A link to a file of the repository (with or without an anchor) names a file that exists."""
    broken = []
    for page in PAGES:
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            path = (page.parent / target.split("#", 1)[0]).resolve()
            if not path.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert broken == []


def headings(page: Path) -> list[str]:
    """The page's markdown headings (not the ``#`` comments inside its code blocks)."""
    out, fenced = [], False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            out.append(line)
    return out


def test_no_heading_is_a_session_a_round_or_a_date() -> None:
    """Chapters are about the product, not about when it was measured: history lives in git."""
    found = [f"{page.relative_to(ROOT)}: {line}" for page in PAGES for line in headings(page)
             if LOG_HEADING.match(line)]
    assert found == []


def test_every_docs_path_named_in_the_repository_exists() -> None:
    """A ``docs/...md`` path named in code, comments or pages is a file that exists (pages move; names must follow)."""
    named = re.compile(r"docs/[A-Za-z0-9_-][A-Za-z0-9_./-]*\.md")
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    missing = []
    for name in files:
        path = ROOT / name
        if name.startswith("docs/results/") or path.suffix not in {".py", ".md", ".sql", ".toml", ".proto", ".yaml",
                                                                    ".yml", ".sh"} or not path.is_file():
            continue
        for found in named.findall(path.read_text(encoding="utf-8", errors="replace")):
            if not (ROOT / found).exists():
                missing.append(f"{name}: {found}")
    assert missing == []
