"""`qgate verify --profile FILE`: the report must embed FILE's resolved profile, and is gated by it.

FILE is read with the loader `qgate run` uses (`load_profile_file`: same
validation, same defaults, relative paths resolved against the file's
folder). Its JSON form is compared with the report's embedded profile, key by
key; the first difference fails verification naming its key path. Two
differences are not tampering and are accepted:

- relative paths: the run resolved them against the folder the file was in
  on the run's machine. When every differing path is `<run folder>/<same
  relative path>`, FILE's text is parsed again with that folder, exactly as
  the run did, and compared again;
- redaction: the report hides secret values (`***REDACTED***`); a redacted
  string matches a file value it could have come from;
- agent suites from before `streamed`: a report whose run asked its tool-call or structured
  suite as is only stores `streamed: false` (filled in when the report is read); FILE's suite
  that writes no `streamed` is then read so too, as that run read it.

The verdicts are then recomputed with FILE's profile, not the embedded one.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar

from qgate.core.redact import REDACTED
from qgate.core.yamlload import YamlSyntaxError, load_yaml
from qgate.errors import ProfileError, VerificationFailed
from qgate.profile import Profile
from qgate.profile.detect import RULE_BEFORE, DropRule
from qgate.profile.load import load_profile_file, parse_profile_text

_MISSING = object()
T = TypeVar("T")


@dataclass
class ProfileMatch:
    """FILE's profile (used for the gates) and what people should know about the match."""

    profile: Profile
    notes: list[str] = field(default_factory=list)


def _show(value: Any) -> str:
    if value is _MISSING:
        return "nothing"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _redacted_match(stored: Any, given: Any) -> bool:
    if not (isinstance(stored, str) and isinstance(given, str) and REDACTED in stored):
        return False
    pattern = ".+?".join(re.escape(part) for part in stored.split(REDACTED))
    return re.fullmatch(pattern, given, flags=re.DOTALL) is not None


def first_difference(stored: Any, given: Any, path: str = "") -> tuple[str, Any, Any] | None:
    """(key path, stored value, given value) of the first difference, in document order."""
    if isinstance(stored, dict) and isinstance(given, dict):
        for key in list(stored) + [k for k in given if k not in stored]:
            sub = f"{path}.{key}" if path else str(key)
            diff = first_difference(stored.get(key, _MISSING), given.get(key, _MISSING), sub)
            if diff is not None:
                return diff
        return None
    if isinstance(stored, list) and isinstance(given, list):
        for i, (a, b) in enumerate(zip(stored, given, strict=False)):
            diff = first_difference(a, b, f"{path}[{i}]")
            if diff is not None:
                return diff
        if len(stored) != len(given):
            return (f"{path} (length)", len(stored), len(given))
        return None
    if stored == given or _redacted_match(stored, given):
        return None
    return (path or "(root)", stored, given)


def _run_folder(stored: Any, given: Any, local_folder: Path) -> Path | None:
    """The folder the run resolved a relative path against, if `given` came from one here."""
    if not (isinstance(stored, str) and isinstance(given, str)):
        return None
    try:
        rel = PurePosixPath(Path(given).relative_to(local_folder).as_posix())
    except ValueError:
        return None
    run_path = PurePosixPath(stored)
    n = len(rel.parts)
    if not run_path.is_absolute() or n == 0 or run_path.parts[-n:] != rel.parts:
        return None
    return Path(*run_path.parts[:-n])


def _normal(profile_json: dict[str, Any]) -> dict[str, Any]:
    """The embedded profile as this qgate reads it (defaults of newer fields filled in)."""
    try:
        normal: dict[str, Any] = Profile.model_validate(profile_json).model_dump(mode="json")
    except ValueError:
        return profile_json  # reported by the caller's own validation
    return normal


def match_profile(embedded: dict[str, Any], file: Path) -> ProfileMatch:
    """Load FILE as `run` does and require the report's embedded profile to equal it.

    A report whose run predates today's default `rule` stored the rule it ran by (`point`,
    filled in when the report is read): FILE is then read again with that rule where it
    writes none, as that run read it (its digest is checked beside, so it is the file that
    ran); the first reading's error stands when the second does not match either.
    """
    matched, before = as_the_run_read_it(lambda rule: _match(embedded, file, rule), file)
    matched.notes += before
    return matched


def as_the_run_read_it(match: Callable[[DropRule | None], T], file: Path) -> tuple[T, list[str]]:
    """`match(None)` (FILE read as today), else `match(RULE_BEFORE)` (as a run from before
    'bound' was the default read it) with a note saying so; the first error when neither
    matches."""
    try:
        return match(None), []
    except (ProfileError, VerificationFailed) as first:
        try:
            matched = match(RULE_BEFORE)
        except (ProfileError, VerificationFailed):
            raise first from None
    return matched, [
        f"{file.name} read with rule {RULE_BEFORE!r} where it writes none, as the run read it "
        "(before 'bound' was the default)"
    ]


def _streamed_as_run(
    stored: dict[str, Any], given: dict[str, Any], raw_text: str
) -> tuple[dict[str, Any], list[str]]:
    """`given` with each agent suite FILE writes no `streamed` for read as asked as is only,
    where the report stores that its run asked it so (a run from before the key); the suites
    so read."""
    try:
        written = load_yaml(raw_text).data
    except YamlSyntaxError:
        return given, []
    quality = written.get("quality") if isinstance(written, dict) else None
    ran, now = stored.get("quality") or {}, given.get("quality") or {}
    keys = [
        key
        for key in ("tool_calls", "structured")
        if isinstance(ran.get(key), dict)
        and ran[key].get("streamed") is False
        and isinstance(now.get(key), dict)
        and now[key].get("streamed") is True
        and not (isinstance(quality, dict) and "streamed" in (quality.get(key) or {}))
    ]
    if not keys:
        return given, []
    read = {key: {**now[key], "streamed": False} for key in keys}
    return {**given, "quality": {**now, **read}}, [f"quality.{key}" for key in keys]


def _match(embedded: dict[str, Any], file: Path, rule: DropRule | None) -> ProfileMatch:
    # ProfileError (exit 2) for a bad file; the files it names need not exist on the
    # auditor's machine (the checkpoint is checked by --model, by digest)
    loaded = load_profile_file(file, check_files=False, rule=rule)
    stored = _normal(embedded)
    given, as_is = _streamed_as_run(stored, loaded.profile.model_dump(mode="json"), loaded.raw_text)
    diff = first_difference(stored, given)
    notes: list[str] = []
    profile = loaded.profile
    if diff is not None:
        folder = _run_folder(diff[1], diff[2], loaded.path.parent)
        if folder is not None:
            as_run = parse_profile_text(
                loaded.raw_text, str(file), folder, check_files=False, rule=rule
            )
            again, _ = _streamed_as_run(stored, as_run.model_dump(mode="json"), loaded.raw_text)
            diff = first_difference(stored, again)
            if diff is None:
                notes.append(
                    f"relative paths of {file.name} resolved against the run's folder {folder}"
                )
    if diff is not None:
        where, was, now = diff
        raise VerificationFailed(
            f"the report's embedded profile differs from {file} at {where}: "
            f"report has {_show(was)}, file has {_show(now)}"
        )
    if as_is:  # the gates are recomputed with the suites as the run asked them
        quality = profile.quality.model_copy(
            update={
                key.split(".", 1)[1]: getattr(profile.quality, key.split(".", 1)[1]).model_copy(
                    update={"streamed": False}
                )
                for key in as_is
            }
        )
        profile = profile.model_copy(update={"quality": quality})
        notes.append(
            f"{file.name}'s {', '.join(as_is)} read as asked as is only (streamed: false) where "
            "it writes none, as the run read it (before agent suites were also asked streamed)"
        )
    return ProfileMatch(profile=profile, notes=notes)
