"""The book's address: one setting that every published thing reads.

The repository that hosts the book, and the site GitHub Pages serves it from, are set
once:

- ``BOOK_REPOSITORY``: ``owner/name`` (what GitHub Actions calls ``github.repository``;
  the book's workflow sets it from the repository it runs in), or a full git URL
  (``https://…``, ``file:///path/to/clone`` for a test). Without it, the checkout's
  ``git remote get-url origin`` when that is a GitHub repository.
- ``BOOK_SITE_URL``: the published site; without it, the GitHub Pages address of the
  repository (``https://owner.github.io/name/``).
- ``BOOK_REF``: the commit that the runner editions install and fetch; without it, the
  checkout's ``git rev-parse HEAD``.
- ``BOOK_PUBLISH=1``: a build for publishing. Then a missing setting, or one still
  holding the placeholder, stops the build with a `SiteError` naming
  ``BOOK_REPOSITORY``.

`_config.yml`'s ``repository.url`` keeps the placeholder ``https://github.com/OWNER/…``
that Jupyter Book needs to start; the build replaces it
(``booktools.ext.site_address``), and so do the runner editions (their first cell), the
PDF's printed addresses and the package's metadata (setup.py).

    python -m booktools.site  # prints the resolved setting, one `name=value` a line
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Mapping, Optional

from booktools import config
from booktools.paths import ROOT

PLACEHOLDER_OWNER = "OWNER"
SETTING = "BOOK_REPOSITORY"
_GITHUB = re.compile(
    r"^(?:https://github\.com/|git@github\.com:|ssh://git@github\.com/)"
    r"(?P<owner>[A-Za-z0-9-]+)/(?P<name>[A-Za-z0-9._-]+?)(?:\.git)?/?$"
)
_OWNER_NAME = re.compile(r"^(?P<owner>[A-Za-z0-9-]+)/(?P<name>[A-Za-z0-9._-]+)$")


class SiteError(ValueError):
    """The book's address is missing or still a placeholder where a real one is
    needed."""


@dataclass(frozen=True)
class Repository:
    """Where the book's sources live: a git URL, and its owner/name when it is on
    GitHub."""

    url: str  # what `git clone` and pip's `git+` take
    branch: str  # the source branch (the editions live on their own branch)
    owner: Optional[str] = None  # GitHub only
    name: Optional[str] = None
    source: str = "_config.yml"  # where the value came from, for messages

    @property
    def placeholder(self) -> bool:
        return self.owner == PLACEHOLDER_OWNER or PLACEHOLDER_OWNER in self.url.split(
            "/"
        )

    @property
    def web_url(self) -> str:
        """The repository's page (buttons, links): its https address on GitHub, else the
        git URL."""
        return (
            f"https://github.com/{self.owner}/{self.name}" if self.owner else self.url
        )


def _git(*args: str) -> str:
    try:
        proc = subprocess.run(
            ["git", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return proc.stdout.strip() if proc.returncode == 0 else ""


def parse(value: str, branch: str, source: str) -> Repository:
    """A setting's value (`owner/name` or a git URL) as a Repository; a `SiteError`
    names a bad one."""
    value = value.strip()
    m = _OWNER_NAME.match(value) or _GITHUB.match(value)
    if m:
        return Repository(
            f"https://github.com/{m['owner']}/{m['name']}",
            branch,
            m["owner"],
            m["name"],
            source,
        )
    if re.match(r"^(https?|file|ssh|git)://", value):
        return Repository(value.rstrip("/"), branch, None, None, source)
    raise SiteError(
        f"{SETTING}: expected owner/name (as github.repository) or a git URL, got"
        f" {value!r}"
    )


def repository(
    env: Optional[Mapping[str, str]] = None, path: Path = config.CONFIG
) -> Repository:
    """The book's repository: ``BOOK_REPOSITORY``, else the checkout's GitHub remote,
    else `_config.yml` (the placeholder, refused when ``BOOK_PUBLISH=1``)."""
    env = os.environ if env is None else env
    repo_cfg = config.repository_settings(path)
    branch = repo_cfg.get("branch", "main")
    if env.get(SETTING):
        found = parse(env[SETTING], branch, SETTING)
    else:
        remote = _remote()
        found = (
            parse(remote, branch, "git remote origin")
            if remote and _GITHUB.match(remote)
            else parse(repo_cfg["url"], branch, "_config.yml")
        )
    if found.placeholder and env.get("BOOK_PUBLISH") == "1":
        raise SiteError(
            f"{SETTING} is not set (the repository is still the placeholder"
            f" {found.url!r} from {found.source}): a build for publishing needs"
            f" {SETTING}=owner/name, as the workflow sets it from github.repository"
        )
    return found


@lru_cache(maxsize=None)
def _remote() -> str:
    return _git("remote", "get-url", "origin")


def site_url(
    env: Optional[Mapping[str, str]] = None, path: Path = config.CONFIG
) -> str:
    """The published book's address, ending in "/": ``BOOK_SITE_URL``, else
    `_config.yml`'s html.baseurl, else the GitHub Pages address of the repository."""
    env = os.environ if env is None else env
    if env.get("BOOK_SITE_URL"):
        return env["BOOK_SITE_URL"].rstrip("/") + "/"
    base = (config.config(path).get("html") or {}).get("baseurl") or ""
    if base:
        return base.rstrip("/") + "/"
    repo = repository(env, path)
    if not repo.owner:
        raise SiteError(
            f"BOOK_SITE_URL: the repository {repo.url!r} is not on GitHub, so the"
            " site's address cannot be derived from it; set BOOK_SITE_URL"
        )
    return f"https://{repo.owner.lower()}.github.io/{repo.name}/"


def ref(env: Optional[Mapping[str, str]] = None) -> str:
    """The commit the runner editions install: ``BOOK_REF``, else the checkout's HEAD,
    else the branch."""
    env = os.environ if env is None else env
    return env.get("BOOK_REF") or _git("rev-parse", "HEAD") or repository(env).branch


def main(argv: Optional[list[str]] = None) -> int:
    try:
        repo = repository()
        print(
            f"repository={repo.web_url}\nsource={repo.source}\nplaceholder={repo.placeholder}"
        )
        print(f"site={site_url()}\nref={ref()}")
    except SiteError as exc:
        print(f"site: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
