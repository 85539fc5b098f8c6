"""Prints, as one JSON list, the help output of several programs, each as if started alone:
`python help_texts.py '[[KIND, NAME, HELP_FLAG], ...]'` (KIND: script, a path relative to the
working directory, or module, for `python -m`; HELP_FLAG: --helpfull or --help).

TensorFlow, Keras and tensorflow-text are imported once; each program then runs in a forked
child with its own argv, sys.path[0] and stdout/stderr, and defines its flags there (nothing of
bert_tf is imported before the fork). That costs one TensorFlow import for all of them instead
of one per program. The flags TensorFlow's import registers for itself (TPU tracing, absltest's)
are removed in each child, so that a program which does not import TensorFlow lists what it
lists alone; the flags of absl and of the program's own modules are listed as they are."""

import json
import os
import runpy
import signal
import sys
import tempfile

import keras  # noqa: F401  (imported before the forks: the cost shared)
import numpy  # noqa: F401
import tensorflow  # noqa: F401
import tensorflow_text  # noqa: F401

from bert_tf import processes  # noqa: E402

CHILD_SECONDS = 120


def _flags_of_the_imports():
    """Names of the absl flags that the imports above registered, absl's own excepted."""
    from absl import flags
    return [flag.name for module, defined in flags.FLAGS.flags_by_module_dict().items()
            if not module.startswith(("absl.app", "absl.logging")) for flag in defined]


def run_child(kind, name, help_flag, out, err):
    """In the child: the program's help, its exit status as the process's."""
    from absl import flags
    for flag in _flags_of_the_imports():
        delattr(flags.FLAGS, flag)
    os.dup2(out.fileno(), 1)
    os.dup2(err.fileno(), 2)
    sys.stdout = os.fdopen(1, "w", closefd=False)
    sys.stderr = os.fdopen(2, "w", closefd=False)
    code = 0
    try:
        if kind == "script":
            sys.argv = [name, help_flag]
            sys.path[0] = os.path.dirname(os.path.abspath(name))
            runpy.run_path(name, run_name="__main__")
        else:
            sys.argv = [name, help_flag]
            sys.path[0] = os.getcwd()
            runpy.run_module(name, run_name="__main__", alter_sys=True)
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    except BaseException:  # noqa: BLE001 - reported like an interpreter would
        import traceback
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    processes.save_coverage()
    os._exit(code)


def help_of(kind, name, help_flag):
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        pid = os.fork()
        if pid == 0:
            run_child(kind, name, help_flag, out, err)
        signal.alarm(CHILD_SECONDS)   # a hung child ends this process with SIGALRM
        _, status = os.waitpid(pid, 0)
        signal.alarm(0)
        out.seek(0)
        err.seek(0)
        return {"kind": kind, "name": name, "returncode": os.waitstatus_to_exitcode(status),
                "stdout": out.read(), "stderr": err.read()}


def main(argv):
    print(json.dumps([help_of(kind, name, flag) for kind, name, flag in json.loads(argv[1])]))


if __name__ == "__main__":
    main(sys.argv)
