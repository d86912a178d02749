"""The `openstack` command for e2e tests, started from an interpreter that has already
imported it.

Why: the client spends over a second of CPU on imports and regular expressions before it
sends a request, and the suite runs it about 300 times. Measured with process accounting over
a whole `make test` (4 workers, 2 cores, CPU-bound throughout): `openstack` took 539 s of the
2,048 s of CPU, more than the TCG guests. With this, a command costs ~0.1 s of CPU instead of
~1.8 s, and the suite's CPU came to 1,682 s.

How: each test worker starts one server (`serve`, below) that imports the client and its
command plugins once, then waits on a Unix socket. The tests' `openstack` (on the PATH that
`driver.os_env` gives, and what `driver.run` runs for `BIN/openstack`) is a small program
(`client`, below) that hands the server its argv, environment, working directory and its
stdin/stdout/stderr (the descriptors themselves, SCM_RIGHTS). The server forks; the fork
takes that environment, directory and those descriptors and runs the client's own entry
point, `openstackclient.shell.main(argv)`, exactly what the installed `openstack` script
runs; its exit status comes back as the small program's. Killing the small program (a test's
timeout) kills the fork.

So what runs is the real, unmodified client code with what a user's shell would give it.
What differs from an exec: its modules were imported before the environment was set. Three
of them read the process's state when imported, and are made to see the command's:
- cliff's `App.NAME`, the program name in every message, from `sys.argv[0]` (the server's is
  the installed script's path);
- openstacksdk's `openstack.config.loader`, where it looks for clouds.yaml, from the working
  directory and $HOME, and stevedore's `_cache`, where it caches entry points, from $HOME:
  both are run again in each fork (`READ_AT_IMPORT`).
Every other module of the installed clients reads the environment in `main` or later (looked
for: module-level reads of os.environ, getenv, getcwd, expanduser, platformdirs, sys.argv).
`test_clients_contract.py` runs the installed script itself (`os_env(..., warm=False)`),
as does every test when NOVA_ASYNC_TEST_WARM_CLI=off.
"""

from __future__ import annotations

import importlib
import json
import os
import select
import signal
import socket
import sys
from pathlib import Path

REAL = Path(sys.executable).parent / "openstack"
SWITCH = "NOVA_ASYNC_TEST_WARM_CLI"   # "off": every test execs the installed script
READ_AT_IMPORT = ("openstack.config.loader", "stevedore._cache")   # see the docstring
_started: Path | None = None   # this process's shim directory, once its server runs


def shim_dir() -> Path | None:
    """The directory holding this worker's `openstack` (its server started on first use);
    None when warm clients are off or the client is not installed."""
    import atexit
    import subprocess
    import tempfile

    global _started
    if _started is not None:
        return _started
    if os.environ.get(SWITCH) == "off" or not REAL.exists():
        return None
    home = Path(tempfile.mkdtemp(prefix="nova-async-warm-cli-"))
    sock = home / "socket"
    server = subprocess.Popen([sys.executable, __file__, "serve", str(sock), str(os.getpid())],
                              stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env={k: v for k, v in os.environ.items() if not k.startswith("OS_")})
    atexit.register(_stop, server, home)
    shim = home / "openstack"
    # -S: no site-packages to scan (only the standard library is used); -E: no PYTHON* variables.
    shim.write_text(f"#!{sys.executable} -SE\n"
                    f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
                    f"import warm_cli; warm_cli.client({str(sock)!r}, {str(REAL)!r})\n")
    shim.chmod(0o755)
    _started = home
    return home


def _stop(server, home: Path) -> None:   # server: its subprocess.Popen
    server.kill()
    server.wait()
    for each in home.iterdir():
        each.unlink()
    home.rmdir()


# --- the small program: one `openstack` command ------------------------------------------

def client(sock_path: str, real: str) -> None:
    """Have the server run this command with this process's argv, environment, directory and
    descriptors 0-2; exit as it did. Without a server (not yet listening, or gone), exec
    the installed client."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(sock_path)
    except OSError:
        os.execv(real, [real, *sys.argv[1:]])
    request = json.dumps({"argv": sys.argv[1:], "env": dict(os.environ), "cwd": os.getcwd()}).encode()
    socket.send_fds(sock, [len(request).to_bytes(8, "big") + request], [0, 1, 2])
    reply = b""
    while chunk := sock.recv(64):
        reply += chunk
    status = int(reply) if reply else 1
    if status < 0:   # killed by a signal: die by the same one
        signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
    sys.exit(status)


# --- the server ------------------------------------------------------------------------------

def serve(sock_path: str, worker: int) -> None:
    """Import the client once, then fork a handler for each connection, until the test
    worker (pid `worker`) is gone, however it went."""
    sys.argv[0] = str(REAL)
    _preload()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(sock_path + ".new")
    os.rename(sock_path + ".new", sock_path)   # clients connect only once it listens
    listener.listen(64)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)   # handlers are reaped by the kernel
    while True:
        if not select.select([listener], [], [], 5)[0]:
            if os.getppid() != worker:   # and did not clean up: this server does
                import shutil
                shutil.rmtree(Path(sock_path).parent, ignore_errors=True)
                return
            continue
        conn, _ = listener.accept()
        if os.fork() == 0:
            listener.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            try:
                _handle(conn)
            finally:
                os._exit(0)
        conn.close()


def _preload() -> None:
    """What a command imports before its request: the shell, and every command module and
    authentication plugin the installed clients declare (a module that fails to import is
    left to fail the command that needs it, as it would)."""
    from importlib.metadata import distributions

    import openstackclient.shell  # noqa: F401
    for ep in (ep for dist in distributions() for ep in dist.entry_points):
        if ep.group.startswith(("openstack.", "keystoneauth1.plugin")) and ep.group != "openstack.cli.extension":
            try:
                ep.load()
            except Exception:  # noqa: BLE001 - see the docstring
                pass


def _handle(conn: socket.socket) -> None:
    """One command: its request read, run in a fork of this handler, its exit status sent
    back; the fork is killed if the small program goes away first."""
    got, fds, _, _ = socket.recv_fds(conn, 65536, 3)
    while len(got) < 8 or len(got) < 8 + int.from_bytes(got[:8], "big"):
        got += conn.recv(65536)
    request = json.loads(got[8:])
    pid = os.fork()
    if pid == 0:
        conn.close()
        _run(request, fds)
    for fd in fds:
        os.close(fd)
    child = os.pidfd_open(pid)
    readable, _, _ = select.select([conn, child], [], [])
    if conn in readable and child not in readable:   # the small program is gone (EOF)
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    conn.sendall(str(os.waitstatus_to_exitcode(status)).encode())


def _run(request: dict, fds: list[int]) -> None:
    """The command itself, as the installed `openstack` script runs it."""
    code = 1
    try:
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        for name in READ_AT_IMPORT:
            if name in sys.modules:
                importlib.reload(sys.modules[name])
        signal.signal(signal.SIGINT, signal.default_int_handler)
        sys.argv = [str(REAL), *request["argv"]]
        from openstackclient.shell import main
        try:
            code = main(request["argv"])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:   # as the interpreter would: the traceback, exit status 1
        import traceback
        traceback.print_exc()
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001 - the reader may be gone
                pass
        os._exit(code or 0)


if __name__ == "__main__" and sys.argv[1:2] == ["serve"]:
    serve(sys.argv[2], int(sys.argv[3]))
