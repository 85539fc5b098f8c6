"""Runner scripts run as `python <script>` would run them, but in the test process (their own
absl flags and logging, bert_tf.cli.run's error report and exit status): for tests whose
subject is the flags, the files read and the output, not a fresh interpreter (which costs
~5 s of TensorFlow import)."""

import contextlib
import io
import logging
import runpy
import subprocess
import sys
from pathlib import Path
from unittest import mock

from helpers import REPO


@contextlib.contextmanager
def _own_flags():
    """absl's global FLAGS holding absl's own flags only, as in a fresh interpreter, while a
    runner script defines and parses its flags; afterwards FLAGS as it was. (The runners
    define flags of the same names, and other tests of this process may have defined some.)"""
    from absl import flags
    state = dict(flags.FLAGS.__dict__)
    fresh = flags.FlagValues()
    for module, defined in flags.FLAGS.flags_by_module_dict().items():
        if module.startswith("absl."):
            for flag in defined:
                fresh[flag.name] = flag
    flags.FLAGS.__dict__.update(fresh.__dict__)
    try:
        yield flags.FLAGS
    finally:
        flags.FLAGS.__dict__.update(state)


@contextlib.contextmanager
def _own_logging():
    """The root logger's handlers and level, absl's verbosity and the process name, put back
    after a runner's main() set up its logging (bert_tf.flags.setup_logging, absl.app)."""
    from absl import command_name
    from absl import logging as absl_logging
    root = logging.getLogger()
    handlers, level, verbosity = list(root.handlers), root.level, absl_logging.get_verbosity()
    name = Path("/proc/self/comm").read_text().strip() if Path("/proc/self/comm").exists() \
        else None
    try:
        yield
    finally:
        for handler in [h for h in root.handlers if h not in handlers]:
            root.removeHandler(handler)
            handler.close()
        root.setLevel(level)
        absl_logging.set_verbosity(verbosity)
        if name:
            command_name.set_kernel_process_name(name)


def run_script(script, *flags):
    """What `python <script> <flags>` does, run in this process: the script runs as __main__
    with those arguments (its absl flags, bert_tf.cli.run(main)), its output and exit status
    returned as a subprocess.CompletedProcess. An exception other than SystemExit (what a bug
    shows as a traceback) propagates."""
    path = str(REPO / script)
    stdout, stderr, status = io.StringIO(), io.StringIO(), 0
    with _own_flags(), _own_logging(), mock.patch.object(sys, "argv", [path, *flags]), \
            contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            runpy.run_path(path, run_name="__main__")
        except SystemExit as exit:
            status = 0 if exit.code is None else exit.code
    return subprocess.CompletedProcess([script, *flags], status, stdout.getvalue(),
                                       stderr.getvalue())


@contextlib.contextmanager
def script_flags(script):
    """absl's FLAGS with the flags `script` defines when imported (not run), for the block."""
    with _own_flags() as values, mock.patch.object(sys, "argv", [str(REPO / script)]):
        runpy.run_path(str(REPO / script), run_name=Path(script).stem)
        yield values
