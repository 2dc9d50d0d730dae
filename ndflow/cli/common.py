"""What ``ndflow predict`` and ``ndflow bench`` share: the user's mistakes as one-line errors.

A mistake in what the user passed (a missing file, a bad flag value, a file that is not a model, an input
that does not fit the model) is a ``CliError``: the command prints it as one ``PROG: error: ...`` line on
stderr and exits with its status, 2 for the command line itself (as argparse does: an unknown flag, a bad
value, a path that does not exist, an unknown backend), 1 for what is found on reading the files or running
the model (not a model, a corrupt image, an input the model cannot take). Anything else is a bug and keeps
its traceback.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable
from typing import NoReturn

#: The exit status of a mistake on the command line (argparse's), and of one found in the files it names.
USAGE = 2
FAILURE = 1


class CliError(Exception):
    """A user's mistake, printed as one line; ``status`` is the exit status."""

    def __init__(self, message: str, status: int = USAGE) -> None:
        super().__init__(message)
        self.status = status


class CliParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors are ``CliError``s (one line, no usage text, no SystemExit)."""

    def error(self, message: str) -> NoReturn:
        raise CliError(f"{message} (see {self.prog} --help)")


def report(prog: str, err: CliError) -> int:
    """Print ``err`` as one ``PROG: error: ...`` line on stderr; its exit status."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    print(f"{prog}: error: {'; '.join(lines)}", file=sys.stderr)
    return err.status


def count(minimum: int) -> Callable[[str], int]:
    """An argparse ``type``: an int of at least ``minimum``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    parse.__name__ = f"int >= {minimum}"
    return parse


def check_backend(name: str | None) -> None:
    """A ``CliError`` naming ``--backend`` if backend ``name`` is not available here (None: the default)."""
    if name is None:
        return
    import ndflow as nf

    if nf.find_backend(name) is None:
        have = ", ".join(nf.engine().backend_names())
        raise CliError(f"--backend {name!r} is not available here (have: {have})")


def use_backend(name: str | None) -> None:
    """Make ``name`` the active backend (nothing for None), after ``check_backend``."""
    check_backend(name)
    if name is not None:
        import ndflow as nf

        nf.set_backend(name)


def model_json_path(path: str) -> str:
    """The ``model.json`` that ``path`` names (the file, or the one in the folder); a ``CliError`` if none. A URL
    (``npm://``, ``http(s)://``, ``file://``) is returned as it is: the loader reports what is wrong with it."""
    if re.match(r"^[a-zA-Z][a-zA-Z0-9+.\-]*://", path):
        return path
    if os.path.isdir(path):
        inner = os.path.join(path, "model.json")
        if not os.path.isfile(inner):
            raise CliError(f"the model folder {path} has no model.json")
        return inner
    if not os.path.exists(path):
        raise CliError(f"the model {path} does not exist")
    return path


def input_file(path: str) -> str:
    """``path`` if it is a file; a ``CliError`` naming ``--input`` if not."""
    if os.path.isdir(path):
        raise CliError(f"--input {path} is a folder, not a file")
    if not os.path.exists(path):
        raise CliError(f"--input {path} does not exist")
    return path


def file_failure(path: str, exc: BaseException, doing: str = "cannot load the model") -> CliError:
    """What the loaders or the model raised for a file (``LOAD_ERRORS``), as a ``CliError`` naming the file."""
    text = str(exc) or type(exc).__name__
    return CliError(text if path in text else f"{doing} {path}: {text}", FAILURE)


#: What the model loaders raise for a file that is not a model, is damaged or uses ops ndflow lacks.
LOAD_ERRORS = (OSError, ValueError, NotImplementedError)
