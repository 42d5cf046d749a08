"""deploy/: the KubeRay manifests and the Slurm script that run `qgate run --cluster`.

The manifests are checked against schemas (Kubernetes' own for the pod templates and the Job,
a hand-written one for the RayCluster) and for the facts that make them work together: the
qgate command line parses with qgate's own `run` command, the Job joins the head's GCS port,
the workers' GPUs are the profile's, and every pod mounts the checkpoint at one path. The Slurm
script and the Job's shell are dry-run with stub executables that log what they were asked.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import textwrap
import tomllib
from pathlib import Path
from typing import Any

import click
import jsonschema
import kubernetes_validate
import pytest
import yaml

from qgate.cli.main import main as qgate_main
from qgate.profile.cluster import ClusterSpec
from qgate.profile.load import load_profile

ROOT = Path(__file__).resolve().parents[2]
KUBERAY = ROOT / "deploy" / "kuberay"
SBATCH = ROOT / "deploy" / "slurm" / "qgate-ray.sbatch"
K8S_VERSION = "1.30.0"
RAY_PIN = next(
    r.split("==")[1]
    for r in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]["ray"]
    if r.startswith("ray==")
)

# KubeRay's RayCluster CRD schema is not on PyPI (it ships only in the operator's Helm chart and
# repository), so this one is written from KubeRay's documented ray.io/v1 RayCluster fields:
# the ones these manifests use, closed (a misspelt field fails), with the pod templates left to
# Kubernetes' own schema below.
_START_PARAMS = {"type": "object", "additionalProperties": {"type": "string"}}
_TEMPLATE = {"type": "object", "required": ["spec"]}
RAYCLUSTER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "additionalProperties": False,
    "properties": {
        "apiVersion": {"const": "ray.io/v1"},
        "kind": {"const": "RayCluster"},
        "metadata": {
            "type": "object",
            "required": ["name"],
            "properties": {
                "name": {"type": "string", "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"}
            },
        },
        "spec": {
            "type": "object",
            "required": ["rayVersion", "headGroupSpec", "workerGroupSpecs"],
            "additionalProperties": False,
            "properties": {
                "rayVersion": {"type": "string"},
                "enableInTreeAutoscaling": {"type": "boolean"},
                "headGroupSpec": {
                    "type": "object",
                    "required": ["rayStartParams", "template"],
                    "additionalProperties": False,
                    "properties": {
                        "serviceType": {"enum": ["ClusterIP", "NodePort", "LoadBalancer"]},
                        "rayStartParams": _START_PARAMS,
                        "template": _TEMPLATE,
                    },
                },
                "workerGroupSpecs": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "required": ["groupName", "replicas", "rayStartParams", "template"],
                        "additionalProperties": False,
                        "properties": {
                            "groupName": {"type": "string"},
                            "replicas": {"type": "integer", "minimum": 0},
                            "minReplicas": {"type": "integer", "minimum": 0},
                            "maxReplicas": {"type": "integer", "minimum": 0},
                            "numOfHosts": {"type": "integer", "minimum": 1},
                            "rayStartParams": _START_PARAMS,
                            "template": _TEMPLATE,
                        },
                    },
                },
            },
        },
    },
}


def _yaml(name: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((KUBERAY / name).read_text())
    return data


def _pod_templates() -> dict[str, dict[str, Any]]:
    cluster = _yaml("raycluster.yaml")["spec"]
    templates = {"head": cluster["headGroupSpec"]["template"]}
    for group in cluster["workerGroupSpecs"]:
        templates[group["groupName"]] = group["template"]
    templates["job"] = _yaml("qgate-job.yaml")["spec"]["template"]
    return templates


def _qgate_run(argv: list[str]) -> click.Context:
    """The qgate command line through qgate's own parser (a renamed option fails here)."""
    assert argv[:2] == ["qgate", "run"], argv
    command = qgate_main.get_command(click.Context(qgate_main), "run")
    assert command is not None
    return command.make_context("run", argv[2:])


# Stub executables: each appends "NODE<TAB>argv" to $STUB_LOG. srun runs the rest of its command
# line "on" the node given with -w; what the script runs itself runs on $SLURMD_NODENAME.
_LOG = 'printf "%s\\t%s\\n" "${STUB_NODE:-$SLURMD_NODENAME}" "$(basename "$0") $*" >> "$STUB_LOG"'
STUBS = {
    "srun": f"""
        {_LOG}
        node=""
        while [ $# -gt 0 ]; do
            case "$1" in
                -w) node=$2; shift 2 ;;
                -*) shift ;;
                *) break ;;
            esac
        done
        STUB_NODE=$node exec "$@"
    """,
    "scontrol": f"""
        {_LOG}
        [ "$1 $2 $3" = "show hostnames node[1-3]" ] && printf 'node1\\nnode2\\nnode3\\n'
    """,
    "hostname": f"""
        {_LOG}
        echo "10.0.0.1 fd00::1"
    """,
    # A worker takes a while to join: without the script's wait, qgate would start first.
    "ray": f"""
        case "$*" in *--address=*--block*) sleep 0.5 ;; esac
        {_LOG}
    """,
    "qgate": f"""
        {_LOG}
        exit "${{QGATE_STUB_STATUS:-0}}"
    """,
    # The script's "is the cluster up with N nodes?" check: up once N `ray start`s were asked.
    "python": """
        cat > /dev/null
        [ -n "${CLUSTER_NEVER_UP:-}" ] && exit 1
        [ "$(grep -c "$(printf '\\t')ray start" "$STUB_LOG")" -ge "$3" ]
    """,
}


@pytest.fixture
def stubs(tmp_path: Path) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in STUBS.items():
        path = bin_dir / name
        path.write_text("#!/bin/bash\n" + textwrap.dedent(body).strip() + "\n")
        path.chmod(0o755)
    keep = ("basename", "grep", "cat", "bash", "sleep", "printf")
    for tool in keep:  # only these real tools: nothing else the scripts run can reach the host
        found = shutil.which(tool)
        if found and not (bin_dir / tool).exists():
            (bin_dir / tool).symlink_to(found)
    return {
        "PATH": str(bin_dir),
        "STUB_LOG": str(tmp_path / "calls.log"),
        "SLURMD_NODENAME": "node1",
        "SLURM_JOB_NODELIST": "node[1-3]",
        "SLURM_NNODES": "3",
        "SLURM_CPUS_ON_NODE": "64",
        "SLURM_GPUS_PER_NODE": "8",
        "QGATE_RAY_POLL_S": "0",
        "HOME": str(tmp_path),
    }


def _calls(env: dict[str, str]) -> list[tuple[str, list[str]]]:
    lines = Path(env["STUB_LOG"]).read_text().splitlines()
    return [(node, shlex.split(argv)) for node, argv in (line.split("\t", 1) for line in lines)]


def _run_sbatch(env: dict[str, str], **extra: str) -> subprocess.CompletedProcess[str]:
    args = ["bash", str(SBATCH), "/profiles/p.yaml", "--out", "/scratch/runs"]
    return subprocess.run(
        args, env={**env, **extra}, capture_output=True, text=True, timeout=60, check=False
    )


def _ray(calls: list[tuple[str, list[str]]], verb: str) -> list[tuple[str, list[str]]]:
    return [(n, a) for n, a in calls if a[0] == "ray" and a[1] == verb]


# --- KubeRay ---------------------------------------------------------------------------------


def test_the_raycluster_has_kuberays_structure_and_the_pinned_ray() -> None:
    cluster = _yaml("raycluster.yaml")
    jsonschema.validate(cluster, RAYCLUSTER_SCHEMA)
    assert cluster["spec"]["rayVersion"] == RAY_PIN
    base = re.search(r"^FROM rayproject/ray:(\S+)", (KUBERAY / "Dockerfile").read_text(), re.M)
    assert base is not None and base.group(1).startswith(f"{RAY_PIN}-py311")
    broken = json.loads(json.dumps(cluster))
    broken["spec"]["workerGroupSpecs"][0]["rayStartParam"] = {}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, RAYCLUSTER_SCHEMA)


@pytest.mark.parametrize("name", ["head", "gpu8", "job"])
def test_each_pod_template_is_valid_kubernetes(name: str) -> None:
    template = _pod_templates()[name]
    pod_template = {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": {"name": name},
        "template": template,
    }
    kubernetes_validate.validate(pod_template, K8S_VERSION, strict=True)
    template["spec"]["containers"][0]["volumeMount"] = []
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(pod_template, K8S_VERSION, strict=True)


def test_the_job_is_valid_kubernetes_and_does_not_retry_a_verdict() -> None:
    job = _yaml("qgate-job.yaml")
    kubernetes_validate.validate(job, K8S_VERSION, strict=True)
    assert job["spec"]["backoffLimit"] == 0
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"


def _job_dry_run(stubs: dict[str, str], status: int) -> tuple[int, list[tuple[str, list[str]]]]:
    container = _yaml("qgate-job.yaml")["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["bash", "-c"]
    done = subprocess.run(
        ["bash", "-c", container["args"][0]],
        env={**stubs, "QGATE_STUB_STATUS": str(status)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return done.returncode, _calls(stubs)


@pytest.mark.parametrize("status", [0, 1, 3])
def test_the_job_joins_as_an_empty_node_runs_qgate_and_leaves(
    stubs: dict[str, str], status: int
) -> None:
    returncode, calls = _job_dry_run(stubs, status)
    assert returncode == status
    assert [a[:2] for _, a in calls] == [["ray", "start"], ["qgate", "run"], ["ray", "stop"]]
    start = calls[0][1]
    assert "--num-cpus=0" in start and "--num-gpus=0" in start


def test_the_job_reaches_the_heads_gcs_port_with_a_profile_whose_gpus_the_workers_have(
    stubs: dict[str, str],
) -> None:
    cluster = _yaml("raycluster.yaml")
    head = cluster["spec"]["headGroupSpec"]
    _, calls = _job_dry_run(stubs, 0)
    ctx = _qgate_run(calls[1][1])
    address = f"{cluster['metadata']['name']}-head-svc:{head['rayStartParams']['port']}"
    assert ctx.params["cluster"] == address
    assert f"--address={address}" in calls[0][1]
    head_ports = {
        p["name"]: p["containerPort"] for p in head["template"]["spec"]["containers"][0]["ports"]
    }
    assert str(head_ports["gcs-server"]) == head["rayStartParams"]["port"] == "6379"

    # The profile the Job names is a shipped one; each worker holds its target's GPUs.
    profile = load_profile(
        ROOT / "precision_profiles" / ctx.params["profile"].name, check_files=False
    )
    for group in cluster["spec"]["workerGroupSpecs"]:
        gpus = group["rayStartParams"]["num-gpus"]
        limits = group["template"]["spec"]["containers"][0]["resources"]["limits"]
        assert int(gpus) == int(limits["nvidia.com/gpu"]) == profile.target.count
        pool = json.loads(json.loads(group["rayStartParams"]["resources"]))
        assert ClusterSpec(candidates=pool).custom()["candidate"] == pool

    # The report and the reference cache land on the Job's persistent volume.
    spec = _yaml("qgate-job.yaml")["spec"]["template"]["spec"]
    claims = {v["name"] for v in spec["volumes"] if "persistentVolumeClaim" in v}
    kept = [m["mountPath"] for m in spec["containers"][0]["volumeMounts"] if m["name"] in claims]
    for key in ("out_root", "cache_dir"):
        assert any(ctx.params[key].is_relative_to(path) for path in kept), key

    # Every pod mounts the checkpoint claim at the one path that holds the profile's model.
    mounts = set()
    for template in _pod_templates().values():
        pod = template["spec"]
        claim = {
            v["name"]
            for v in pod["volumes"]
            if v.get("persistentVolumeClaim", {}).get("claimName") == "qgate-models"
        }
        mounts |= {
            m["mountPath"] for m in pod["containers"][0]["volumeMounts"] if m["name"] in claim
        }
        assert claim
    assert len(mounts) == 1 and Path(profile.model.path).is_relative_to(mounts.pop())


# --- Slurm -----------------------------------------------------------------------------------


def test_the_slurm_script_is_valid_bash() -> None:
    done = subprocess.run(["bash", "-n", str(SBATCH)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck is not installed")
def test_the_slurm_script_passes_shellcheck() -> None:
    done = subprocess.run(["shellcheck", str(SBATCH)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout


@pytest.mark.parametrize("status", [0, 1])
def test_slurm_head_then_workers_then_qgate_then_ray_stopped_everywhere(
    stubs: dict[str, str], status: int
) -> None:
    done = _run_sbatch(stubs, QGATE_STUB_STATUS=str(status))
    assert done.returncode == status, done.stderr
    calls = _calls(stubs)
    starts = _ray(calls, "start")
    # The head first (the script waits for it); the workers start at once, in any order.
    assert starts[0][0] == "node1" and sorted(n for n, _ in starts[1:]) == ["node2", "node3"]
    head = starts[0][1]
    assert "--head" in head and "--port=6379" in head and "--node-ip-address=10.0.0.1" in head
    for _, argv in starts[1:]:
        assert "--address=10.0.0.1:6379" in argv and "--block" in argv
    for _, argv in starts:
        assert "--num-gpus=8" in argv
    runs = [i for i, (_, a) in enumerate(calls) if a[0] == "qgate"]
    assert len(runs) == 1
    node, argv = calls[runs[0]]
    assert node == "node1"
    ctx = _qgate_run(argv)
    assert ctx.params["cluster"] == "10.0.0.1:6379"
    assert str(ctx.params["out_root"]) == "/scratch/runs"
    stops = [(i, n) for i, (n, a) in enumerate(calls) if a[:2] == ["ray", "stop"]]
    assert sorted(n for _, n in stops) == ["node1", "node2", "node3"]
    assert all(i > runs[0] for i, _ in stops)
    assert max(i for i, (_, a) in enumerate(calls) if a[:2] == ["ray", "start"]) < runs[0]


def test_slurm_waits_for_every_node_and_stops_ray_when_the_cluster_never_comes_up(
    stubs: dict[str, str],
) -> None:
    done = _run_sbatch(stubs, CLUSTER_NEVER_UP="1", QGATE_RAY_WAIT_S="0")
    assert done.returncode == 3
    assert "fewer than 1 nodes" in done.stderr
    calls = _calls(stubs)
    assert not [a for _, a in calls if a[0] == "qgate"]
    assert sorted(n for n, a in calls if a[:2] == ["ray", "stop"]) == ["node1", "node2", "node3"]


def test_slurm_passes_a_bad_profile_exit_through(stubs: dict[str, str]) -> None:
    assert _run_sbatch(stubs, QGATE_STUB_STATUS="2").returncode == 2
    assert len(_ray(_calls(stubs), "stop")) == 3
