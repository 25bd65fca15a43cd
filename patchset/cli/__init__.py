"""The command line: argument parsing and rendering only; one module per verb.

One contract for every verb (see :mod:`patchset.errors`): exit 0 when what
was asked holds, 1 on a finding, 2 on bad input (one line on stderr naming
where and what to do), 3 on an internal error (one line plus the path of a
file holding the traceback; never 1, which CI reads as "a fix is missing").
With ``--format json`` stdout is exactly one JSON document, errors included:
``{"ok": false, "error": {"file", "line", "message", "hint"}}``, and ``"more"``, a list of such objects,
where one input held several problems.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import json
import os
import re
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any, NoReturn

from patchset import __version__
from patchset.cli import progress
from patchset.cli.registry import VERBS as _REGISTRY
from patchset.cli.registry import help_texts
from patchset.errors import (
    EXIT_BROKEN_PIPE,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    PatchsetError,
    Terminated,
    UsageError,
)
from patchset.report.common import error_doc

# Each verb module has add_parser(subparsers) and run(args) -> exit code; names and help live in .registry.
VERBS = tuple(_REGISTRY)



class _Parser(argparse.ArgumentParser):
    """argparse, but a bad command line is a :class:`UsageError` (one line, exit 2, JSON when asked)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message, hint=f"see {self.prog} --help")

    def format_help(self) -> str:
        verb = self.prog.split()[-1]
        if self.description is None and verb in _REGISTRY:  # a verb's help text is filled in when shown

            self.description, self.epilog = help_texts(verb)
        return super().format_help()


class _Version(argparse.Action):
    """``--version``: what a bug report needs, patchset's version with the Python and platform it runs on."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: Any, values: Any, option: Any = None) -> None:
        sys.stdout.write(version_line() + "\n")
        raise SystemExit(0)


def version_line() -> str:
    import platform  # --version only

    return (f"patchset {__version__} (Python {platform.python_version()} {platform.python_implementation()}, "
            f"{platform.system()} {platform.release()} {platform.machine()})")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser. With ``only``, no other verb's module is imported; when ``only`` is a verb, the others
    are left out (the CLI imports a verb's module only when that verb runs), else they are listed for
    the top-level help and for the error that names the choices."""
    parser = _Parser(prog="patchset", description="Keep a fork's vLLM backports honest.")
    parser.add_argument("--version", action=_Version, nargs=0, help="print patchset's version, Python and platform")
    sub = parser.add_subparsers(dest="verb", metavar="VERB")
    sub.required = True
    for name, verb in _REGISTRY.items():
        if only is not None and name != only:
            if only not in _REGISTRY:
                sub.add_parser(name, help=verb.summary)  # listed for --help; never run
            continue
        module = importlib.import_module(f"patchset.cli.{verb.module}")
        p = module.add_parser(sub)
        p.set_defaults(run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    as_json = wants_json(argv)
    # not next(): importing the `next` verb's module (patchset.cli.next) shadows the builtin in this package
    words = [a for a in argv if not a.startswith("-")]
    verb = words[0] if words else ""
    prog = f"patchset {verb}" if re.fullmatch(r"[a-z][a-z-]*", verb) else "patchset"
    # JSON goes through a buffer, so that an error after a partial write still leaves one document.
    buffer = io.StringIO()
    try:
        with contextlib.redirect_stdout(buffer) if as_json else contextlib.nullcontext(), _sigterm_unwinds():
            args = build_parser(verb).parse_args(argv)
            progress.install(verb, quiet=args.quiet, verbose=args.verbose)
            try:
                code = args.run(args)
            finally:
                progress.finish()
        if as_json:
            _one_document(buffer.getvalue())
    except PatchsetError as e:
        return _refuse(prog, e, as_json)
    except KeyboardInterrupt as e:
        return _interrupted(prog, as_json, terminated=isinstance(e, Terminated))
    except BrokenPipeError:
        return _reader_gone()
    except SystemExit:  # --help, --version: argparse has printed what was asked
        sys.stdout.write(buffer.getvalue())
        raise
    except Exception as e:  # noqa: BLE001 -- the contract: any other exception is an internal error, exit 3
        return _internal(prog, e, as_json)
    try:
        sys.stdout.write(buffer.getvalue())
        sys.stdout.flush()
    except BrokenPipeError:
        return _reader_gone()
    return code


def run() -> NoReturn:
    """The ``patchset`` command (and ``python -m patchset``): :func:`main`, then the process ends."""
    raise SystemExit(main())


def wants_json(argv: Sequence[str]) -> bool:
    """Whether the command line asks for ``--format json`` (read before parsing: a parse error needs it too)."""
    for i, arg in enumerate(argv):
        if arg == "--":
            break
        if arg == "--format=json" or (arg == "--format" and i + 1 < len(argv) and argv[i + 1] == "json"):
            return True
    return False


def error_document(error: dict) -> str:
    return json.dumps({"ok": False, "error": error}, indent=2) + "\n"


def _one_document(text: str) -> None:
    try:
        json.loads(text)
    except ValueError as e:
        raise RuntimeError(f"--format json printed something other than one JSON document ({e})") from e


def _refuse(prog: str, e: PatchsetError, as_json: bool) -> int:
    print(f"{prog}: error: {e}", file=sys.stderr)
    if as_json:
        sys.stdout.write(error_document(error_doc(e)))
    return e.exit_code




def _reader_gone() -> int:
    """stdout's reader left (``| head``): nothing to report to, and no traceback either."""
    with contextlib.suppress(OSError):
        # Python flushes stdout once more at exit: point it at /dev/null so that flush cannot fail too.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return EXIT_BROKEN_PIPE


def _interrupted(prog: str, as_json: bool, *, terminated: bool = False) -> int:
    word = "terminated (SIGTERM)" if terminated else "interrupted"
    print(f"{prog}: {word}", file=sys.stderr)
    if as_json:
        sys.stdout.write(error_document({"file": None, "line": None, "message": word, "hint": None}))
    return EXIT_TERMINATED if terminated else EXIT_INTERRUPTED


@contextlib.contextmanager
def _sigterm_unwinds():
    """SIGTERM (a cancelled CI job, ``timeout``, ``docker stop``) raises :class:`Terminated` in the main thread,
    so the clean-up a Ctrl-C gets runs for it too; a second SIGTERM during that clean-up is ignored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(signum: int, frame: object) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _internal(prog: str, e: BaseException, as_json: bool) -> int:
    import tempfile  # only here: a run that ends well never pays for these
    import traceback

    what = f"{type(e).__name__}: {e}".splitlines()[0] if str(e) else type(e).__name__
    try:
        fd, path = tempfile.mkstemp(prefix="patchset-traceback-", suffix=".txt")
        with open(fd, "w") as f:
            f.write(f"{prog} {__version__}\n" + "".join(traceback.format_exception(e)))
        where = f"full traceback in {path}"
    except OSError as write_error:  # no temp dir: the traceback still reaches the user
        traceback.print_exception(e, file=sys.stderr)
        path, where = None, f"traceback above; could not write it to a file: {write_error}"
    print(f"{prog}: internal error: {what} ({where}; please report it)", file=sys.stderr)
    if as_json:
        sys.stdout.write(error_document({"file": None, "line": None, "message": f"internal error: {what}",
                                         "hint": "please report it with the traceback file", "traceback": path}))
    return EXIT_INTERNAL
