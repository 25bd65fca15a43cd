"""A warm interpreter for the venv runner: imports the heavy third-party modules once, forks one pytest per run.

Started by ``patchset.runners.warm`` with the venv's own Python, never imported by patchset itself.
Usage: ``python patchset_forkserver.py PACKAGE MODULE...``. It imports each MODULE (torch, pytest,
the test dependencies: never PACKAGE, the code under test), then says on stdout, in one JSON line,
what it imported and whether forking is safe. After that it reads one JSON request a line on stdin::

    {"id": 1, "argv": [...pytest arguments...], "cwd": DIR, "env": {...}, "path": [DIR...], "log": FILE}

forks a child for each and answers ``{"id": 1, "pid": PID}`` at once and
``{"id": 1, "exit": CODE, "maxrss_kb": KB, "seconds": S}`` when the child is gone (CODE as
``subprocess`` gives it: negative for a signal). The child starts a session of its own (its process
group is its pid: whoever times it out kills that group), sends its output to FILE, takes ``env`` as
its whole environment, puts ``path`` first on ``sys.path`` (as PYTHONPATH would), then runs pytest as
``python -m pytest`` does. PACKAGE is imported there, from the child's own path, for the first time.

Forking is unsafe, and said so instead of ``ready``, when an import started a thread (a forked child
gets only the forking thread, and any lock another thread held stays held), initialised CUDA, or
imported PACKAGE. End of input: the remaining children are killed and the server leaves.
"""

import contextlib
import gc
import json
import os
import select
import signal
import sys
import threading
import time


def _reply(out, message):
    try:
        out.write(json.dumps(message) + "\n")
        out.flush()
    except (BrokenPipeError, ValueError):  # patchset is gone: the children are killed at end of input
        pass


def _unsafe(package):
    if package in sys.modules or any(m.startswith(package + ".") for m in sys.modules):
        return f"a warm import imported {package}, the code under test"
    if threading.active_count() > 1:
        names = ", ".join(t.name for t in threading.enumerate() if t is not threading.main_thread())
        return f"a warm import started {threading.active_count() - 1} thread(s) ({names})"
    torch = sys.modules.get("torch")
    if torch is not None and getattr(getattr(torch, "cuda", None), "is_initialized", lambda: False)():
        return "a warm import initialised CUDA"
    return None


def _child(request, base_path, keep_fds):
    """The forked child: one pytest run, as ``python -m pytest`` in a fresh process would make it."""
    code = 3
    try:
        os.setsid()
        for fd in keep_fds:
            os.close(fd)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGPIPE):
            signal.signal(sig, signal.SIG_DFL if sig != signal.SIGINT else signal.default_int_handler)
        log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        os.close(null)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.path[:] = [request["cwd"], *request["path"], *base_path]
        import runpy

        sys.argv = ["pytest", *request["argv"]]  # runpy puts the module's file first, as -m does
        try:
            runpy.run_module("pytest", run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        sys.stdout.flush()
        sys.stderr.flush()
        import atexit

        atexit._run_exitfuncs()  # what an interpreter runs when it leaves (multiprocessing's joins, vLLM's own)
    except BaseException:  # noqa: BLE001 -- whatever happens, the child must leave here, never return
        try:
            import traceback

            traceback.print_exc()
            sys.stderr.flush()
        except BaseException:  # noqa: BLE001
            pass
    finally:
        os._exit(code if isinstance(code, int) and 0 <= code < 256 else 3)


def _probe(package, spec, base_path):
    """What importing PACKAGE and the test tree's conftest imports besides them, found in a forked child
    (this process imports neither): the modules, in the order they were imported."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        names = []
        try:
            os.close(read_end)
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.dup2(null, 2)
            os.chdir(spec["cwd"])
            os.environ.update(spec.get("env", {}))
            sys.path[:] = [spec["cwd"], *spec["path"], *base_path]
            before = set(sys.modules)
            for name in [package, *spec.get("also", [])]:
                with contextlib.suppress(BaseException):  # what did get imported is still worth warming
                    __import__(name)
            local = tuple(os.path.realpath(p) + os.sep for p in [spec["cwd"], *spec["path"]])
            skip = {package, "tests", "__main__", *spec.get("also", [])}
            for name, module in list(sys.modules.items()):
                if name in before or name.split(".")[0] in skip:
                    continue
                where = getattr(module, "__file__", None)
                if where and os.path.realpath(where).startswith(local):
                    continue  # the test tree's and the overlay's own modules are the runs' to import
                names.append(name)
            with os.fdopen(write_end, "w") as pipe:
                pipe.write(json.dumps(names))
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        data = pipe.read()
    os.waitpid(pid, 0)
    try:
        return json.loads(data)
    except ValueError:
        return None  # the probe broke: nothing learnt, nothing to keep


def main():
    package, modules = sys.argv[1], sys.argv[2:]
    probe = None
    if modules and modules[0].startswith("--probe="):
        probe, modules = json.loads(modules[0][len("--probe="):]), modules[1:]
    out = os.fdopen(os.dup(1), "w")  # answers; stray prints of warm imports go to stderr
    os.dup2(2, 1)
    if sys.path and sys.path[0] == os.path.dirname(os.path.abspath(__file__)):
        sys.path.pop(0)  # this script's folder is not a path of the runs
    base_path = list(sys.path)
    started = time.monotonic()
    probed = _probe(package, probe, base_path) if probe else []
    imported, failed = _import_all([*modules, *(probed or [])])
    unsafe = _unsafe(package)
    _reply(out, {"ready": unsafe is None, "unsafe": unsafe, "imported": imported, "failed": failed,
                 "probed": probed, "seconds": round(time.monotonic() - started, 2)})
    if unsafe:
        return 0
    # Everything imported so far is left out of the children's garbage collections: a collection writes to
    # every object it visits, and each page it writes to is copied out of the server's (docs/records/performance.md).
    gc.freeze()
    _serve(out, base_path)
    return 0


def _import_all(names):
    """Import each module; those that cannot be imported are left to the runs."""
    imported, failed = [], []
    for name in names:
        try:
            __import__(name)
            imported.append(name)
        except BaseException as e:  # noqa: BLE001 -- a module that cannot be imported is left to the runs
            failed.append(f"{name}: {type(e).__name__}: {e}")
    return imported, failed


def _serve(out, base_path):
    """Fork a child per request line on stdin, answer its pid, then its exit and usage; at end of input
    kill what still runs."""
    stdin = sys.stdin.fileno()
    running = {}  # pid -> (request id, start time)
    buffered = b""
    eof = False
    while not eof or running:
        if not eof:
            ready, _, _ = select.select([stdin], [], [], 0.05 if running else None)
            if ready:
                chunk = os.read(stdin, 65536)
                eof = not chunk
                buffered += chunk
                while b"\n" in buffered:
                    line, buffered = buffered.split(b"\n", 1)
                    request = json.loads(line)
                    pid = os.fork()
                    if pid == 0:
                        _child(request, base_path, (out.fileno(),))  # stdin (fd 0) is replaced there
                    running[pid] = (request["id"], time.monotonic())
                    _reply(out, {"id": request["id"], "pid": pid})
            if eof:
                for pid in running:  # nobody is waiting for these any more
                    with contextlib.suppress(OSError):
                        os.killpg(pid, signal.SIGKILL)
        else:
            time.sleep(0.05)
        _reap(out, running)


def _reap(out, running):
    """Answer each child that has ended: its exit code and what it used."""
    while running:
        pid, status, usage = os.wait4(-1, os.WNOHANG)
        if pid == 0:
            break
        if pid not in running:
            continue
        rid, t0 = running.pop(pid)
        _reply(out, {"id": rid, "exit": os.waitstatus_to_exitcode(status), "maxrss_kb": usage.ru_maxrss,
                     "minflt": usage.ru_minflt, "cpu": round(usage.ru_utime + usage.ru_stime, 3),
                     "seconds": round(time.monotonic() - t0, 3)})


if __name__ == "__main__":
    sys.exit(main())
