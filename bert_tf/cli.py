"""How every runner runs its main(): bad input ends the run with one line on stderr naming the
file and line, or the flag or field, at fault (`run_classifier.py: error: train.tsv:17: ...`,
exit status 1, as absl's own flag errors), instead of a traceback. Anything else is a bug and
keeps its traceback."""

import linecache
import os
import sys

from absl import app

# Paths that are missing or unreadable: bad input wherever they are raised.
_PATH_ERRORS = (FileNotFoundError, FileExistsError, IsADirectoryError, NotADirectoryError,
                PermissionError)
_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def run(main):
    """app.run(main), reporting bad input as one line and exit status 1."""
    app.run(lambda argv: _reporting_bad_input(main, argv))


def _reporting_bad_input(main, argv):
    try:
        return main(argv)
    except Exception as error:  # re-raised unless it is bad input
        message = bad_input_message(error)
        if message is None:
            raise
        print(f"{os.path.basename(sys.argv[0])}: error: {message}", file=sys.stderr, flush=True)
        raise SystemExit(1) from None


def bad_input_message(error):
    """The one-line report of `error` if it is bad input, else None.

    Bad input is a missing, unreadable or already existing path (raised anywhere,
    TensorFlow's NotFoundError included) or a ValueError the project raised on purpose: one of
    bert_tf's error classes (ConfigError, DataFormatError, SquadFormatError, ...), or one raised
    by a `raise` statement in bert_tf or the runner script. A ValueError raised inside
    TensorFlow, Keras or NumPy, or by a failing expression of ours (`a, b = values`), is a bug
    and keeps its traceback."""
    if isinstance(error, _PATH_ERRORS):
        if error.filename and error.strerror:
            return f"{error.filename}: {error.strerror}"
        return str(error)
    tf = sys.modules.get("tensorflow")
    if tf is not None and isinstance(error, tf.errors.NotFoundError):
        return error.message
    if isinstance(error, ValueError) and (type(error).__module__.startswith("bert_tf.")
                                          or _raised_by_project(error)):
        return str(error)
    return None


def _raised_by_project(error):
    """Whether error's innermost frame is a `raise` statement in bert_tf or the runner script."""
    tb, last = error.__traceback__, None
    while tb is not None:
        last, tb = tb, tb.tb_next
    if last is None:
        return False
    path = os.path.abspath(last.tb_frame.f_code.co_filename)
    ours = path.startswith(_PACKAGE) or path == os.path.abspath(sys.argv[0])
    return ours and linecache.getline(path, last.tb_lineno).lstrip().startswith("raise")
