"""Profiles written inline in a test: the problems their loading reports."""

from __future__ import annotations

from pathlib import Path

from qgate.errors import ProfileError
from qgate.profile.load import parse_profile_text

ROOT = Path(__file__).resolve().parents[2]


def problems_of(text: str) -> list[str]:
    """Each problem `parse_profile_text` reports for `text` (file p.yaml at the repository
    root, no file checks); empty when it loads."""
    try:
        parse_profile_text(text, "p.yaml", ROOT, check_files=False)
    except ProfileError as exc:
        return exc.details
    return []
