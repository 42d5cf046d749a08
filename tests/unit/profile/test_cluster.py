"""The profile's `cluster:` block: what it accepts, what it refuses (file:line:key, exit 2), what
each life then holds, and that it travels in the signed report's profile."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from helpers.profiles import problems_of
from helpers.report_synthetic import PROFILE, build_report

from qgate.attest.keys import load_signer
from qgate.attest.statement import Subject
from qgate.cli.main import main
from qgate.cluster.plan import life_needs
from qgate.errors import ProfileError
from qgate.profile import ClusterSpec, Profile
from qgate.profile.cluster import address_problem
from qgate.profile.load import parse_profile_text
from qgate.profile.load_multi import first_profile, load_any_profile_file
from qgate.report.verify.single import default_recompute
from qgate.report.writer import ENVELOPE_NAME, write_report

ROOT = Path(__file__).resolve().parents[3]

BASE = """\
name: t
model: {embedded: smollm2}
target: {accelerator: H200, count: 8}
candidate:
  args: {kv_cache_dtype: fp8}
quality:
  math: {max_drop: 0.1}
"""


@pytest.mark.parametrize("address", ["auto", "ray-head:6379", "10.0.0.7:6380", "[::1]:6379"])
def test_addresses_ray_can_join_are_accepted(address: str) -> None:
    assert address_problem(address) is None
    assert problems_of(BASE + f"cluster: {{address: '{address}'}}\n") == []


@pytest.mark.parametrize(
    ("address", "says"),
    [
        ("ray-head", "HOST:PORT"),
        (":6379", "HOST:PORT"),
        ("ray-head:70000", "port '70000'"),
        ("ray-head:gcs", "port 'gcs'"),
        ("ray://ray-head:10001", "Ray Client"),
        ("", "HOST:PORT"),
        ("ray:secret@ray-head:6379", "no credentials"),
        ("ray-head;reboot:6379", "'ray-head;reboot' is not a host name"),
        ("`reboot`:6379", "is not a host name"),
        ("$(reboot):6379", "HOST:PORT"),
        ("$HEAD:6379", "is not a host name"),
        ("-ray-head:6379", "is not a host name"),
    ],
)
def test_a_bad_address_names_its_line_and_key(address: str, says: str) -> None:
    found = problems_of(BASE + f"cluster:\n  address: '{address}'\n")
    assert len(found) == 1, found
    assert found[0].startswith("p.yaml:9 cluster.address: "), found
    assert says in found[0]


@pytest.mark.parametrize(
    ("line", "key", "says"),
    [
        ("  reference: {GPU: 1}", "cluster.reference.GPU", "target.count"),
        ("  candidates: {CPU: 2}", "cluster.candidates.CPU", "cluster.cpus"),
        ("  candidates: {cand: 0}", "cluster.candidates.cand", "must be > 0"),
        ("  reference: {ref: 1.5}", "cluster.reference.ref", "whole number"),
        ("  cpus: 2.5", "cluster.cpus", "whole number"),
        ("  cpus: 0", "cluster.cpus", "must be > 0"),
        ("  node: a", "cluster.node", "unknown key"),
    ],
)
def test_bad_resources_name_their_line_and_key(line: str, key: str, says: str) -> None:
    found = problems_of(BASE + "cluster:\n" + line + "\n")
    assert len(found) == 1, found
    assert found[0].startswith(f"p.yaml:9 {key}: "), found
    assert says in found[0]


def test_validate_exits_2_on_a_bad_cluster_key(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(BASE + "cluster:\n  address: ray-head\n")
    result = CliRunner().invoke(main, ["validate", str(path)])
    assert result.exit_code == 2, result.output
    assert f"{path}:9 cluster.address: " in result.output


def test_each_life_holds_what_the_block_names() -> None:
    text = BASE + "cluster: {reference: {ref: 1}, candidates: {cand: 1}, cpus: 4}\n"
    profile = parse_profile_text(text, "p.yaml", ROOT, check_files=False)
    ref, cand = (life_needs(profile, side) for side in ("reference", "fp8"))
    assert ref.as_dict() == {"CPU": 4.0, "GPU": 8.0, "ref": 1.0}
    assert cand.as_dict() == {"CPU": 4.0, "GPU": 8.0, "cand": 1.0}
    # a mapping given by the caller wins over the block; the cores stay the block's
    assert life_needs(profile, "reference", {}).as_dict() == {"CPU": 4.0, "GPU": 8.0}
    plain = parse_profile_text(BASE, "p.yaml", ROOT, check_files=False)
    assert life_needs(plain, "reference").as_dict() == {"CPU": 1.0, "GPU": 8.0}


def test_a_multi_profile_shares_the_block_and_names_a_bad_key_once(tmp_path: Path) -> None:
    text = BASE.replace(
        "candidate:\n  args: {kv_cache_dtype: fp8}\n",
        "candidates:\n  a: {args: {kv_cache_dtype: fp8}}\n  b: {args: {max_num_seqs: 4}}\n",
    )
    good = tmp_path / "good.yaml"
    good.write_text(text + "cluster: {address: auto, candidates: {cand: 1}}\n")
    loaded = load_any_profile_file(good, check_files=False)
    assert first_profile(loaded).cluster == ClusterSpec(address="auto", candidates={"cand": 1})
    assert {c.profile.cluster.address for c in loaded.multi.candidates} == {"auto"}  # type: ignore[union-attr]
    bad = tmp_path / "bad.yaml"
    bad.write_text(text + "cluster: {address: ray-head}\n")
    with pytest.raises(ProfileError) as err:
        load_any_profile_file(bad, check_files=False)
    assert err.value.details == [
        f"{bad}:9 cluster.address: give 'auto' or HOST:PORT of the cluster's head "
        "(Ray's GCS port, 6379 by default)"
    ]


def test_the_block_is_part_of_the_signed_profile(tmp_path: Path) -> None:
    """It is in the report's embedded profile: the report verifies, against the profile file
    too, and an edited address does not verify."""
    block = {"address": "ray-head:6379", "candidates": {"cand": 1}}
    profile_json = {**PROFILE, "cluster": block}
    file = tmp_path / "p.yaml"
    file.write_text(yaml.safe_dump(profile_json, sort_keys=False))
    report = build_report(fns=default_recompute(), profile_json=profile_json)
    report.profile_sha256 = hashlib.sha256(file.read_bytes()).hexdigest()
    assert report.profile["cluster"] == {
        "address": "ray-head:6379",
        "reference": {},
        "candidates": {"cand": 1.0},
        "cpus": None,
    }
    assert CliRunner().invoke(main, ["keygen", "--out", str(tmp_path / "k")]).exit_code == 0
    out = tmp_path / "run"
    out.mkdir()
    subject = Subject(name="profile/p.yaml", sha256=report.profile_sha256)
    write_report(out, report, [subject], load_signer(key_path=tmp_path / "k.pem"), html=False)
    envelope, pub = out / ENVELOPE_NAME, str(tmp_path / "k.pub.pem")
    ok = CliRunner().invoke(
        main, ["verify", str(envelope), "--pubkey", pub, "--profile", str(file)]
    )
    assert ok.exit_code == 0, ok.output
    signed = json.loads(envelope.read_text())
    statement = json.loads(base64.b64decode(signed["payload"]))
    statement["predicate"]["profile"]["cluster"]["address"] = "auto"
    signed["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    edited = tmp_path / "edited.jsonl"
    edited.write_text(json.dumps(signed) + "\n")
    moved = CliRunner().invoke(main, ["verify", str(edited), "--pubkey", pub])
    assert moved.exit_code != 0
    assert "signature" in moved.output


def test_a_profile_without_the_block_reads_as_before() -> None:
    profile = Profile.model_validate(PROFILE)
    assert profile.cluster is None
    dumped = profile.model_dump(mode="json")
    assert dumped["cluster"] is None
    assert Profile.model_validate(json.loads(json.dumps(dumped))) == profile
