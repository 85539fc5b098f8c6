"""`python <script>` as a process of its own, forked from a warm interpreter.

Each runner process pays ~5 s of importing TensorFlow, Keras and tensorflow-text before its
first step. `Popen` and `run` here start the same commands (a script, `-m module` or `-c code`)
as real processes, with their own pid, environment, working directory, file descriptors, exit
status, signals and TensorFlow runtime, but forked from a server (multiprocessing's
forkserver) that has imported those libraries once and run no op, so nothing of a runtime is
shared. The quickstart's stages and the tests' runner processes start this way.

What differs from a fresh interpreter: the libraries are imported before the child's
environment is set, so a variable read at import time keeps the server's value (the server is
started with the first call's environment; of ours only TF_CPP_MIN_LOG_LEVEL is read then), and
memory is shared with the server until written. Elsewhere than Linux, or with
BERT_TF_FORK_SERVER=0, the commands run through subprocess as usual.
"""

import atexit
import io
import multiprocessing
import os
import runpy
import subprocess
import sys
import threading
import traceback
from multiprocessing import reduction

# Imported once by the server (the libraries every runner imports, and the tokenizer's code
# point tables; importing runs no op). A name that fails to import is skipped by
# multiprocessing.
PRELOAD = ["numpy", "tensorflow", "keras", "tensorflow_text", "absl.app", "bert_tf.cli",
           "bert_tf.jobs.classifier", "bert_tf.jobs.pretraining", "bert_tf.jobs.squad",
           "bert_tf.tokenization.tables_built"]
ENV_SWITCH = "BERT_TF_FORK_SERVER"

_lock = threading.Lock()
_context = None


def available():
    return sys.platform.startswith("linux") and os.environ.get(ENV_SWITCH, "1") != "0"


def _fork_context(env):
    global _context
    with _lock:
        if _context is None:
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload(PRELOAD)
            saved = dict(os.environ)
            os.environ.update({k: v for k, v in env.items() if k == "TF_CPP_MIN_LOG_LEVEL"})
            try:
                from multiprocessing import forkserver
                forkserver.ensure_running()
            finally:
                os.environ.clear()
                os.environ.update(saved)
            _context = context
    return _context


def start_server(env=None):
    """Starts the server now, without waiting for its imports (the first fork waits for them):
    a caller that will start runners later gets the seconds of importing for free meanwhile."""
    if available():
        _fork_context(dict(os.environ if env is None else env))


class _Fd:
    """A file descriptor handed to the forked child (sent to the server with the process)."""

    def __init__(self, fd):
        self.fd = fd

    def __reduce__(self):
        return _Fd._received, (reduction.DupFd(self.fd),)

    @staticmethod
    def _received(dup):
        return dup.detach()


def save_coverage():
    """Under `coverage run`/`pytest --cov` a forked child's coverage is kept: os._exit skips
    the atexit hook that would save it. For every child that leaves by os._exit."""
    coverage = sys.modules.get("coverage")
    current = coverage.Coverage.current() if coverage is not None else None
    if current is not None:
        current.stop()
        current.save()


def _child(argv, env, cwd, fds):
    """The forked process: what the interpreter does for `python argv[1:]`, then exit."""
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    for target, fd in enumerate(fds):
        if fd is None:
            fd = os.open(os.devnull, os.O_RDWR)
        elif fd == "stdout":
            fd = os.dup(1)
        if fd != target:
            os.dup2(fd, target)
            os.close(fd)
    unbuffered = env.get("PYTHONUNBUFFERED", "") not in ("", "0")
    sys.stdin = open(0, closefd=False)
    sys.stdout = io.TextIOWrapper(open(1, "wb", closefd=False), line_buffering=True,
                                  write_through=unbuffered)
    sys.stderr = io.TextIOWrapper(open(2, "wb", closefd=False), line_buffering=True,
                                  write_through=True)
    code = 0
    try:
        if argv[1] == "-m":
            sys.argv = [argv[2], *argv[3:]]
            sys.path[0] = cwd
            runpy.run_module(argv[2], run_name="__main__", alter_sys=True)
        elif argv[1] == "-c":
            sys.argv = ["-c", *argv[3:]]
            sys.path[0] = ""
            exec(compile(argv[2], "<string>", "exec"), {"__name__": "__main__"})
        else:
            script = os.path.join(cwd, argv[1])
            sys.argv = argv[1:]
            sys.path[0] = os.path.dirname(os.path.abspath(script))
            runpy.run_path(script, run_name="__main__")
    except SystemExit as exit_:
        if exit_.code is None or isinstance(exit_.code, int):
            code = exit_.code or 0
        else:
            print(exit_.code, file=sys.stderr)
            code = 1
    except KeyboardInterrupt:
        traceback.print_exc()
        code = 130
    except BaseException:  # what the interpreter does with an uncaught exception
        traceback.print_exc()
        code = 1
    finally:
        try:
            atexit._run_exitfuncs()
            save_coverage()
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def is_python_command(argv):
    """True for `[sys.executable, script | -m module | -c code, ...]`."""
    argv = [str(a) for a in argv]
    return (len(argv) >= 2 and argv[0] == sys.executable
            and (argv[1] in ("-m", "-c") and len(argv) >= 3 or not argv[1].startswith("-")))


class Popen:
    """A forked `python ...` with subprocess.Popen's interface for the common cases: stdout
    and stderr None (this process's), DEVNULL, PIPE (a pipe, as `.stdout`/`.stderr`), an open
    file, or (stderr) STDOUT."""

    def __init__(self, argv, env=None, cwd=None, stdout=None, stderr=None, text=False,
                 bufsize=-1):
        argv = [str(a) for a in argv]
        if not is_python_command(argv):
            raise ValueError(f"not a `python <script>` command: {argv}")
        env = dict(os.environ if env is None else env)
        self.args, self.returncode = argv, None
        self.stdout = self.stderr = None
        child_ends, close_after = [None], []
        for name, target in (("stdout", stdout), ("stderr", stderr)):
            if target is subprocess.STDOUT and name == "stderr":
                child_ends.append("stdout")
            elif target is subprocess.PIPE:
                read, write = os.pipe()
                setattr(self, name, open(read, "r" if text else "rb",
                                         buffering=1 if text and bufsize == 1 else -1))
                child_ends.append(write)
                close_after.append(write)
            elif target is subprocess.DEVNULL:
                child_ends.append(None)
            elif target is None:
                child_ends.append(1 if name == "stdout" else 2)
            else:
                target.flush()
                child_ends.append(target.fileno())
        fds = [fd if fd is None or fd == "stdout" else _Fd(fd) for fd in child_ends]
        self._process = _fork_context(env).Process(
            target=_child, args=(argv, env, os.path.abspath(cwd or os.getcwd()), fds))
        try:
            self._process.start()
        finally:
            for fd in close_after:
                os.close(fd)
        self.pid = self._process.pid

    def poll(self):
        if self.returncode is None and self._process.exitcode is not None:
            self.returncode = self._process.exitcode
        return self.returncode

    def wait(self, timeout=None):
        self._process.join(timeout)
        if self.poll() is None:
            raise subprocess.TimeoutExpired(self.args, timeout)
        return self.returncode

    def send_signal(self, signum):
        if self.poll() is None:
            os.kill(self.pid, signum)

    def kill(self):
        self._process.kill()

    def terminate(self):
        self._process.terminate()

    def communicate(self, timeout=None):
        """Reads stdout and stderr (those that are pipes) to their end, then waits."""
        out = {}

        def read(name):
            stream = getattr(self, name)
            out[name] = stream.read()
            stream.close()

        readers = [threading.Thread(target=read, args=(name,), daemon=True)
                   for name in ("stdout", "stderr") if getattr(self, name) is not None]
        for reader in readers:
            reader.start()
        self.wait(timeout)
        for reader in readers:
            reader.join()
        return out.get("stdout"), out.get("stderr")


def run(argv, env=None, cwd=None, capture_output=False, text=False, timeout=None, check=False,
        stdout=None, stderr=None):
    """subprocess.run for `python ...` commands, forked when available(); any other command,
    or any command when not available(), through subprocess."""
    if not (available() and is_python_command(argv)):
        return subprocess.run(argv, env=env, cwd=cwd, capture_output=capture_output, text=text,
                              timeout=timeout, check=check, stdout=stdout, stderr=stderr)
    if capture_output:
        stdout = stderr = subprocess.PIPE
    proc = Popen(argv, env=env, cwd=cwd, stdout=stdout, stderr=stderr, text=text)
    try:
        out, err = proc.communicate(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise
    done = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    if check:
        done.check_returncode()
    return done


def popen(argv, **kwargs):
    """Popen here when available() and argv is a python command, else subprocess.Popen."""
    if available() and is_python_command(argv):
        return Popen(argv, **kwargs)
    return subprocess.Popen(argv, **kwargs)
