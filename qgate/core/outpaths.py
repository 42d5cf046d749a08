"""Output paths from the command line, checked before a command starts any work.

A run folder that cannot be created would otherwise fail after the
reference stage (or a perf run) with the operating system's traceback; here
it is one line that names the option, and exit 2.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from qgate.errors import BadInput


def _writable(folder: Path) -> bool:
    # os.access alone says yes to root on a read-only file system; creating
    # an unnamed temporary file is the real test and leaves nothing behind.
    if not os.access(folder, os.W_OK | os.X_OK):
        return False
    try:
        with tempfile.TemporaryFile(dir=folder):
            return True
    except OSError:
        return False


def _creatable(path: Path, option: str) -> None:
    """`path` does not exist: its closest existing ancestor must be a writable folder."""
    ancestor = path.absolute().parent
    while not ancestor.exists() and not ancestor.is_symlink() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise BadInput(f"{option} {path}: cannot create it, {ancestor} is not a folder")
    if not _writable(ancestor):
        raise BadInput(f"{option} {path}: cannot create it, {ancestor} is not writable")


def check_out_dir(path: Path, option: str) -> None:
    """Raise BadInput unless `path` is a writable folder or can be created as one."""
    if path.is_symlink() and not path.exists():
        raise BadInput(f"{option} {path}: broken symbolic link")
    if path.exists():
        if not path.is_dir():
            raise BadInput(f"{option} {path}: is a file, not a folder")
        if not _writable(path):
            raise BadInput(f"{option} {path}: folder is not writable")
        return
    _creatable(path, option)


def check_out_file(path: Path, option: str) -> None:
    """Raise BadInput unless `path` can be written as a file (its folders may be created)."""
    if path.is_dir():
        raise BadInput(f"{option} {path}: is a folder, not a file")
    if path.is_symlink() and not path.exists():
        raise BadInput(f"{option} {path}: broken symbolic link")
    if path.exists():
        if not _writable(path.parent):
            raise BadInput(f"{option} {path}: its folder is not writable")
        return
    _creatable(path, option)


def check_in_file(path: Path, option: str) -> None:
    """Raise BadInput unless `path` is a readable file."""
    if not path.exists():
        raise BadInput(f"{option} {path}: no such file")
    if path.is_dir():
        raise BadInput(f"{option} {path}: is a folder, not a file")
    if not os.access(path, os.R_OK):
        raise BadInput(f"{option} {path}: cannot read the file (permission denied)")
