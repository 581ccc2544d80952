"""The package's links, from the book's one address setting (book/booktools/site.py).

``BOOK_REPOSITORY=owner/name`` (the workflow sets it from ``github.repository``) and,
optionally, ``BOOK_SITE_URL`` give the wheel's Homepage, Source and Issues links.
Without the setting the wheel has no links (never a placeholder). Everything else is in
pyproject.toml."""

import os
import re

from setuptools import setup


def project_urls() -> dict:
    value = os.environ.get("BOOK_REPOSITORY", "").strip()
    m = re.match(
        r"^(?:https://github\.com/)?([A-Za-z0-9-]+)/([A-Za-z0-9._-]+?)(?:\.git)?/?$",
        value,
    )
    if not m or m.group(1) == "OWNER":
        return {}
    owner, name = m.groups()
    repo = f"https://github.com/{owner}/{name}"
    site = (
        os.environ.get("BOOK_SITE_URL") or f"https://{owner.lower()}.github.io/{name}/"
    )
    return {"Homepage": site, "Source": repo, "Issues": f"{repo}/issues"}


setup(project_urls=project_urls())
