"""`quality.sampling`: every parameter by default, judged by max_flips 0 without the exact
test, refused where it could never fail or where a sizing key would size nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from qgate.errors import ProfileError
from qgate.profile.load import load_profile_file
from qgate.profile.sampling import SamplingSuite
from qgate.quality.plans import sampling_plan
from qgate.quality.sampling_data import PARAMS

HEAD = "name: s\nmodel: {embedded: smollm2}\ntarget: {accelerator: cpu}\ncandidate: {}\n"


def test_every_parameter_is_checked_by_default_and_one_lost_fails() -> None:
    spec = SamplingSuite()
    assert tuple(spec.params) == PARAMS
    assert (spec.max_flips, spec.significance, spec.max_drop) == (0, False, None)
    (row,) = sampling_plan(spec)
    assert (row.suite, row.items) == ("sampling", 11)
    assert "21 requests, one at a time" in row.detail


def test_a_limit_that_can_never_fail_is_refused_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(HEAD + "quality:\n  sampling: {params: [temperature, seed], max_flips: 2}\n")
    with pytest.raises(ProfileError) as refused:
        load_profile_file(path, check_files=False)
    assert "p.yaml:6 quality.sampling.max_flips" in str(refused.value.details[0])
    assert "can never fail" in refused.value.details[0]


def test_sizing_keys_are_refused() -> None:
    with pytest.raises(ValidationError, match="size nothing"):
        SamplingSuite.model_validate({"detect": {"drop": 0.2}})
