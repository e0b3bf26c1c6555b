"""MkDocs hook: the repository's Markdown files outside docs/ that the pages link to, built into the site.

README.md (set-up and the five-minute tour) becomes the page `getting-started.md`, benchmarks/README.md the page
`contributing/benchmarks.md`. The pages keep links that work where they are read on GitHub or PyPI (README links
`docs/user/offsets.md`, a page in docs/user/ links `../../README.md#a-five-minute-tour`); at build time every
relative link is resolved against the file's place in the repository and, when it names a file under docs/ or
one of the files above, rewritten to that page of the site. Other links are left to MkDocs' own checks.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
#: repository path -> the page it becomes
MIRRORED = {"README.md": "getting-started.md", "benchmarks/README.md": "contributing/benchmarks.md"}
_LINK = re.compile(r"(\]\()([^)\s#]+)((?:#[^)\s]*)?\))")
_FENCE = re.compile(r"^\s*(```|~~~)")


def on_files(files: Files, config: Any) -> Files:
    for repo_path, uri in MIRRORED.items():
        files.append(File.generated(config, uri, abs_src_path=str(ROOT / repo_path)))
    return files


def repo_path_of(src_uri: str) -> str:
    """Where a page's source lives in the repository."""
    for repo_path, uri in MIRRORED.items():
        if uri == src_uri:
            return repo_path
    return f"docs/{src_uri}"


def site_uri(target: str) -> str | None:
    """The page or file of the site a repository path is, or None if it is not part of the site."""
    if target in MIRRORED:
        return MIRRORED[target]
    if target.startswith("docs/"):
        return target[len("docs/"):]
    return None


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    src_uri = page.file.src_uri
    here = posixpath.dirname(repo_path_of(src_uri))

    def rewrite(m: re.Match[str]) -> str:
        link = m.group(2)
        if re.match(r"^[a-z][a-z0-9+.-]*:", link) or link.startswith("/"):
            return m.group(0)
        uri = site_uri(posixpath.normpath(posixpath.join(here, link)))
        if uri is None:
            return m.group(0)
        return m.group(1) + posixpath.relpath(uri, posixpath.dirname(src_uri) or ".") + m.group(3)

    out, fenced = [], False
    for line in markdown.splitlines(keepends=True):
        if _FENCE.match(line):
            fenced = not fenced
        out.append(line if fenced else _LINK.sub(rewrite, line))
    return "".join(out)
