"""Every relative link in the project's Markdown pages resolves: the file exists and, for `page.md#anchor`, the
page has a heading with that GitHub anchor. The top-level README is a front door that links to the detailed pages,
so a moved or renamed section must not leave a dead link behind. Also: no page calls a paper "seed 00N".

Run alone as a script to list the broken links: `python tests/test_docs_links.py`.
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
# [text](target) and ![alt](target); the target ends at whitespace or the closing parenthesis
_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_INLINE_CODE = re.compile(r"`+[^`]*`+")


def markdown_pages() -> list[Path]:
    """The Markdown pages people read: tracked *.md files, without generated result reports."""
    try:
        out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.md"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
        names = out.split()
    except (OSError, subprocess.CalledProcessError):  # not a git checkout (an sdist): walk the tree
        names = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*.md") if ".venv" not in p.parts]
    return sorted(ROOT / n for n in names if not n.startswith("benchmarks/results/") and (ROOT / n).is_file())


def _prose_lines(text: str):
    """(line number, line) outside fenced code blocks."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: its text without Markdown, lower-case, punctuation dropped, spaces to '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links keep their text
    text = text.replace("`", "").replace("*", "")
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)  # \w keeps letters, digits and '_' (also non-ASCII letters, as GitHub)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for _, line in _prose_lines(page.read_text(encoding="utf-8")):
        m = _HEADING.match(line)
        if not m:
            continue
        base = github_anchor(m.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found


def broken_links(pages: list[Path] | None = None) -> list[str]:
    """'page:line: target (why)' for every relative link whose file or anchor does not exist."""
    problems = []
    anchor_cache: dict[Path, set[str]] = {}
    for page in pages if pages is not None else markdown_pages():
        for number, line in _prose_lines(page.read_text(encoding="utf-8")):
            for target in _LINK.findall(_INLINE_CODE.sub("", line)):
                if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto:
                    continue
                path_part, _, anchor = target.partition("#")
                dest = (page.parent / path_part).resolve() if path_part else page
                where = f"{page.relative_to(ROOT)}:{number}: {target}"
                if not dest.exists():
                    problems.append(f"{where} (no such file)")
                    continue
                if anchor and dest.suffix == ".md":
                    if dest not in anchor_cache:
                        anchor_cache[dest] = anchors(dest)
                    if anchor not in anchor_cache[dest]:
                        problems.append(f"{where} (no heading with anchor #{anchor})")
    return problems


def seed_names(pages: list[Path] | None = None) -> list[str]:
    """Lines that call a paper 'seed 000' .. 'seed 009' (papers are named by their systems)."""
    pattern = re.compile(r"\bseed\s+00\d\b", re.I)
    return [f"{p.relative_to(ROOT)}:{n}: {line.strip()}"
            for p in (pages if pages is not None else markdown_pages())
            for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if pattern.search(line)]


def test_every_relative_link_resolves():
    pages = markdown_pages()
    assert ROOT / "README.md" in pages and len(pages) >= 10
    assert broken_links(pages) == []


def test_no_page_names_a_paper_by_seed_number():
    assert seed_names() == []


def test_checker_finds_a_dead_file_a_dead_anchor_and_ignores_code(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    (tmp_path / "other.md").write_text("# Title\n\n## The plugin at scale — `x.py`\n\n## Title\n")
    page = tmp_path / "README.md"
    page.write_text(
        "[ok](other.md#the-plugin-at-scale--xpy) [dup](other.md#title-1) [self](#top) [web](https://example.org/x)\n"
        "# Top\n"
        "[gone](missing.md) [bad anchor](other.md#nothing-here)\n"
        "```\n[in code](nowhere.md)\n```\n"
        "`[inline](nowhere.md)` and seed 003 here\n")
    assert broken_links([page]) == [
        "README.md:3: missing.md (no such file)",
        "README.md:3: other.md#nothing-here (no heading with anchor #nothing-here)",
    ]
    assert seed_names([page]) == ["README.md:7: `[inline](nowhere.md)` and seed 003 here"]


if __name__ == "__main__":
    bad = broken_links() + seed_names()
    print("\n".join(bad) or f"all links resolve in {len(markdown_pages())} pages")
    sys.exit(1 if bad else 0)
