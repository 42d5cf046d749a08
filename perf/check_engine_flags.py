"""Parse a vLLM profile's engine flags with the installed vLLM's own `vllm serve` parser.

    python perf/check_engine_flags.py precision_profiles/glm-5.2-kv-offload-mi325x.yaml

For each role (reference, candidate) it builds the command-line flags exactly
as qgate would (engine.args overlaid by the role's args, `engine_args_to_flags`)
and parses them with `vllm serve`'s argument parser, so a flag the installed
vLLM does not have (renamed, removed, misspelt) shows before a GPU machine is
booked. Prints the flags, every value as vLLM parsed it, and exits 1 when any
flag is unknown or a value is refused. Importing vLLM takes 10-20 s.
"""

from __future__ import annotations

import sys
from pathlib import Path


def check(path: Path) -> bool:
    """Print what vLLM's parser makes of both roles' flags; True when it took every one."""
    from vllm.entrypoints.launchers.cli_args import make_arg_parser
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    from qgate.profile.load import load_profile
    from qgate.runtime.command import engine_args_to_flags, merge_args

    profile = load_profile(path, check_files=False)
    parser = make_arg_parser(FlexibleArgumentParser())
    good = True
    for role in ("reference", "candidate"):
        args = merge_args(profile.engine.args, getattr(profile, role).args)
        flags = engine_args_to_flags(args)
        try:
            parsed, unknown = parser.parse_known_args(["--model", "/model", *flags])
        except SystemExit:
            print(f"{role}: vLLM refused a value in {' '.join(flags)}")
            good = False
            continue
        print(f"{role}: {' '.join(flags)}")
        for key in args:
            print(f"  {key} = {getattr(parsed, key, '(not a vllm serve option)')!r}")
        if unknown:
            print(f"  UNKNOWN to this vLLM: {' '.join(unknown)}")
            good = False
    return good


if __name__ == "__main__":
    import vllm

    print(f"vLLM {vllm.__version__}")
    results = [check(Path(p)) for p in sys.argv[1:]]
    sys.exit(0 if all(results) else 1)
