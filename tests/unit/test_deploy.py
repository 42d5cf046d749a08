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
from qgate.cluster.placement import NodeInfo, assign
from qgate.cluster.plan import life_needs
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

# KubeRay's RayCluster schema, for the parts these manifests use: written here from KubeRay
# v1.7.0's CRD (ray-operator/config/crd/bases/ray.io_rayclusters.yaml, the ray.io/v1
# openAPIV3Schema; Apache-2.0), with its keys, types and required lists (plus what the API
# server and the operator require: a name, a pod spec), checked against it key by key when
# written. The CRD itself (934 KB, mostly the pod template's schema, which kubernetes_validate
# checks below for the Kubernetes version) is not vendored: it is generated code of another
# project and no package ships it. Closed where the manifests are, as `kubectl apply` (strict
# field validation) rejects an unknown field of a structural schema.
_INT32 = {"type": "integer", "minimum": -(2**31), "maximum": 2**31 - 1}
_STRINGS = {"type": "object", "additionalProperties": {"type": "string"}}
_TEMPLATE = {"type": "object", "required": ["spec"]}
_GROUP = {
    "rayStartParams": _STRINGS,
    "resources": _STRINGS,
    "labels": _STRINGS,
    "template": _TEMPLATE,
}
RAYCLUSTER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "additionalProperties": False,
    "properties": {
        "apiVersion": {"const": "ray.io/v1"},
        "kind": {"const": "RayCluster"},
        "metadata": {"type": "object", "required": ["name"]},
        "spec": {
            "type": "object",
            "required": ["headGroupSpec"],
            "additionalProperties": False,
            "properties": {
                "rayVersion": {"type": "string"},
                "enableInTreeAutoscaling": {"type": "boolean"},
                "suspend": {"type": "boolean"},
                "headGroupSpec": {
                    "type": "object",
                    "required": ["template"],
                    "additionalProperties": False,
                    "properties": {**_GROUP, "serviceType": {"type": "string"}},
                },
                "workerGroupSpecs": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["groupName", "maxReplicas", "minReplicas", "template"],
                        "additionalProperties": False,
                        "properties": {
                            **_GROUP,
                            "groupName": {"type": "string"},
                            "replicas": _INT32,
                            "minReplicas": _INT32,
                            "maxReplicas": _INT32,
                            "numOfHosts": _INT32,
                            "idleTimeoutSeconds": _INT32,
                            "suspend": {"type": "boolean"},
                        },
                    },
                },
            },
        },
    },
}
_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_RAY_START_RESOURCES = ("num-cpus", "num-gpus", "memory", "resources")


def kuberay_problems(cluster: dict[str, Any]) -> list[str]:
    """What KubeRay's operator refuses in a RayCluster that its CRD lets through (v1.7.0,
    ray-operator/controllers/ray/utils/validation.go: ValidateRayClusterMetadata and
    ValidateRayClusterSpec, the checks that apply without autoscaling or fault tolerance), and
    replicas outside minReplicas..maxReplicas, which it would quietly clamp."""
    out = []
    name = cluster["metadata"]["name"]
    if len(name) > 53 or not _DNS1035.match(name):
        out.append(f"name {name!r}: a DNS-1035 label of at most 53 characters")
    spec = cluster["spec"]
    groups = [("head", spec["headGroupSpec"])]
    groups += [(g["groupName"], g) for g in spec.get("workerGroupSpecs", [])]
    for label, group in groups:
        params = group.get("rayStartParams", {})
        if not group["template"]["spec"].get("containers"):
            out.append(f"{label}: no container")
        if group.get("resources") and any(params.get(k) for k in _RAY_START_RESOURCES):
            out.append(f"{label}: resources both in rayStartParams and in resources")
        if "labels" in params:
            out.append(f"{label}: rayStartParams['labels'] (use labels)")
        if label != "head" and not spec.get("enableInTreeAutoscaling"):
            low, high = group["minReplicas"], group["maxReplicas"]
            if not 0 <= low <= group.get("replicas", low) <= high:
                out.append(f"{label}: needs 0 <= minReplicas <= replicas <= maxReplicas")
    return out


def ray_start_resources(value: str) -> dict[str, float]:
    """A rayStartParams `resources` value as Ray gets it: KubeRay pastes `--resources=VALUE`
    into the pod's shell command (common/pod.go, convertParamMap), and reads VALUE itself with
    its quotes trimmed (getResourcesMap) when it adds accelerator resources."""
    (flag,) = shlex.split(f"--resources={value}")
    resources: dict[str, float] = json.loads(flag.removeprefix("--resources="))
    assert json.loads(value.strip("'\"` ")) == resources, "KubeRay cannot read it back"
    return resources


def kuberay_nodes(cluster: dict[str, Any]) -> dict[str, NodeInfo]:
    """The Ray nodes KubeRay starts for `cluster`, by pod name, with the resources their
    `ray start` gets: rayStartParams, else the container's limits (num-cpus from the CPU limit,
    num-gpus from a limit whose name ends in 'gpu'), custom ones from `resources`."""
    spec = cluster["spec"]
    groups = [("head", 1, spec["headGroupSpec"])]
    groups += [(g["groupName"], g["replicas"], g) for g in spec["workerGroupSpecs"]]
    nodes = {}
    for name, replicas, group in groups:
        params = group.get("rayStartParams", {})
        limits = group["template"]["spec"]["containers"][0]["resources"]["limits"]
        gpus = next((v for k, v in limits.items() if k.endswith("gpu")), "0")
        resources = {
            "CPU": float(params.get("num-cpus", limits["cpu"])),
            "GPU": float(params.get("num-gpus", gpus)),
        }
        if "resources" in params:
            resources |= ray_start_resources(params["resources"])
        for i in range(replicas):
            pod = f"{name}-{i}"
            nodes[pod] = NodeInfo(node_id=pod, ip=f"10.1.0.{len(nodes) + 1}", resources=resources)
    return nodes


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


# Stub executables: each appends "NODE<TAB>argv" (shell-quoted) to $STUB_LOG. srun runs the rest
# of its command line "on" the node given with -w; what the script runs itself runs on
# $SLURMD_NODENAME.
_LOG = (
    'printf "%s\\t%s\\n" "${STUB_NODE:-$SLURMD_NODENAME}" '
    '"$(basename "$0")$(printf " %q" "$@")" >> "$STUB_LOG"'
)
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
    # IPv6 and Debian's loopback name first: the script must pick the network address.
    "hostname": f"""
        {_LOG}
        echo "${{HOSTNAME_IPS:-fd00::1 127.0.1.1 10.0.0.1}}"
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


def _run_sbatch(env: dict[str, str], *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    args = args or ("/profiles/p.yaml", "--out", "/scratch/runs")
    return subprocess.run(
        ["bash", str(SBATCH), *args],
        env={**env, **extra},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _ray(calls: list[tuple[str, list[str]]], verb: str) -> list[tuple[str, list[str]]]:
    return [(n, a) for n, a in calls if a[0] == "ray" and a[1] == verb]


# --- KubeRay ---------------------------------------------------------------------------------


def test_the_raycluster_has_kuberays_structure_and_the_pinned_ray() -> None:
    cluster = _yaml("raycluster.yaml")
    jsonschema.validate(cluster, RAYCLUSTER_SCHEMA)
    assert kuberay_problems(cluster) == []
    assert cluster["spec"]["rayVersion"] == RAY_PIN
    base = re.search(r"^FROM rayproject/ray:(\S+)", (KUBERAY / "Dockerfile").read_text(), re.M)
    assert base is not None and base.group(1).startswith(f"{RAY_PIN}-py311")
    broken = json.loads(json.dumps(cluster))
    broken["spec"]["workerGroupSpecs"][0]["rayStartParam"] = {}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, RAYCLUSTER_SCHEMA)
    del broken["spec"]["workerGroupSpecs"][0]["rayStartParam"]
    broken["spec"]["workerGroupSpecs"][1]["maxReplicas"] = 0
    broken["spec"]["workerGroupSpecs"][1]["resources"] = {"cand": "1"}
    assert kuberay_problems(broken) == [
        "candidate: resources both in rayStartParams and in resources",
        "candidate: needs 0 <= minReplicas <= replicas <= maxReplicas",
    ]


def test_the_pools_resources_reach_ray_as_json() -> None:
    groups = {g["groupName"]: g for g in _yaml("raycluster.yaml")["spec"]["workerGroupSpecs"]}
    assert {
        name: ray_start_resources(g["rayStartParams"]["resources"]) for name, g in groups.items()
    } == {
        "reference": {"ref": 1},
        "candidate": {"cand": 1},
    }
    # KubeRay's older documented form reaches Ray too, but KubeRay cannot read it back.
    with pytest.raises(json.JSONDecodeError):
        ray_start_resources('"{\\"cand\\": 1}"')


@pytest.mark.parametrize("pools", [False, True], ids=["any-worker", "pools"])
def test_the_reference_and_the_candidate_start_at_once_on_the_workers(
    stubs: dict[str, str], pools: bool
) -> None:
    """qgate's own placement over the nodes the manifests start: the head and the Job's node
    hold nothing, the two lives go to two workers at once, each to its pool when the profile
    names the pools the worker groups declare."""
    _, calls = _job_dry_run(stubs, 0)
    ctx = _qgate_run(calls[1][1])
    profile = load_profile(
        ROOT / "precision_profiles" / ctx.params["profile"].name, check_files=False
    )
    assert profile.cluster is None
    if pools:
        spec = ClusterSpec(reference={"ref": 1}, candidates={"cand": 1})
        profile = profile.model_copy(update={"cluster": spec})
    nodes = kuberay_nodes(_yaml("raycluster.yaml"))
    start = calls[0][1]
    job = {"CPU": float(_flag(start, "--num-cpus")), "GPU": float(_flag(start, "--num-gpus"))}
    nodes["job"] = NodeInfo(node_id="job", ip="10.1.0.99", resources=job)
    placed = assign(
        [life_needs(profile, "reference"), life_needs(profile, "candidate")], [*nodes.values()]
    )
    assert not isinstance(placed, str), placed
    where = [node.node_id for node in placed]
    if pools:
        assert where == ["reference-0", "candidate-0"]
    else:
        assert sorted(where) == ["candidate-0", "reference-0"]
    # A third life at once has no node: the head and the Job's pod hold none.
    third = assign([life_needs(profile, "reference")] * 3, [*nodes.values()])
    assert isinstance(third, str) and "does not fit" in third


def _flag(argv: list[str], name: str) -> str:
    return next(a.split("=", 1)[1] for a in argv if a.startswith(f"{name}="))


@pytest.mark.parametrize("name", ["head", "reference", "candidate", "job"])
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
        # a pool a profile can name (custom resources qgate accepts in its cluster block)
        ClusterSpec(candidates=ray_start_resources(group["rayStartParams"]["resources"]))

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


def test_slurm_pools_cpu_nodes_and_a_typed_gpu_count(stubs: dict[str, str]) -> None:
    """Custom resources for a profile's pools (the head's, the workers'); CPU nodes ask Slurm
    for no GPUs; a typed request (h200:8) gives Ray the count."""
    done = _run_sbatch(
        stubs,
        QGATE_RAY_HEAD_RESOURCES='{"ref": 1}',
        QGATE_RAY_WORKER_RESOURCES='{"cand": 1}',
        QGATE_GPUS_PER_NODE="0",
    )
    assert done.returncode == 0, done.stderr
    calls = _calls(stubs)
    starts = _ray(calls, "start")
    pools = {node: json.loads(_flag(argv, "--resources")) for node, argv in starts}
    assert pools == {"node1": {"ref": 1}, "node2": {"cand": 1}, "node3": {"cand": 1}}
    ClusterSpec(reference=pools["node1"], candidates=pools["node2"])
    assert all("--num-gpus=0" in argv for _, argv in starts)
    steps = [a for _, a in calls if a[0] == "srun" and "ray" in a and "start" in a]
    assert len(steps) == 3 and not [a for a in steps if any("--gpus" in x for x in a)]

    Path(stubs["STUB_LOG"]).unlink()
    done = _run_sbatch(stubs, SLURM_GPUS_PER_NODE="h200:8")
    assert done.returncode == 0, done.stderr
    calls = _calls(stubs)
    assert all("--num-gpus=8" in a for _, a in _ray(calls, "start"))
    steps = [a for _, a in calls if a[0] == "srun" and "ray" in a and "start" in a]
    assert all("--gpus-per-task=8" in a for a in steps) and len(steps) == 3
    assert not [a for _, a in _ray(calls, "start") if any("--resources" in x for x in a)]


def test_slurm_head_address_given_or_none_found(stubs: dict[str, str]) -> None:
    done = _run_sbatch(stubs, QGATE_HEAD_IP="192.168.7.1")
    assert done.returncode == 0, done.stderr
    calls = _calls(stubs)
    assert not [a for _, a in calls if a[0] == "hostname"]
    ctx = _qgate_run(next(a for _, a in calls if a[0] == "qgate"))
    assert ctx.params["cluster"] == "192.168.7.1:6379"

    Path(stubs["STUB_LOG"]).unlink()
    done = _run_sbatch(stubs, HOSTNAME_IPS="fd00::1 127.0.1.1")
    assert done.returncode == 3
    assert "no IPv4 network address found for node1" in done.stderr
    assert [a[0] for _, a in _calls(stubs)] == ["scontrol", "srun", "hostname"]


def test_slurm_without_a_profile_is_a_usage_error(stubs: dict[str, str]) -> None:
    done = subprocess.run(
        ["bash", str(SBATCH)], env=stubs, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 2 and "usage: sbatch" in done.stderr
    assert not Path(stubs["STUB_LOG"]).exists()
