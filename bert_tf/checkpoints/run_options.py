"""run_options.json: the options a fine-tuning run writes beside its checkpoints
(bert_tf.jobs.driver.record_options), and the input settings bert_tf.predict and
export_savedmodel.py take from it when their command line does not give them: a model fed
other inputs than it was trained on (another sequence length, no windows) predicts worse
without any error."""

import json
import os

from bert_tf import fileio
from bert_tf.serving.names import RUN_OPTIONS

# What a checkpoint's reader takes from its run when not given; windows only with a stride.
SETTINGS = ("max_seq_length", "do_lower_case", "max_query_length", "max_answer_length")
WINDOW_SETTINGS = ("window_pooling", "max_windows")


def beside(path, name):
    """`name` in the checkpoint's folder (`path` a folder or a prefix), if it exists."""
    path = os.fspath(path)
    folder = path if fileio.isdir(path) else os.path.dirname(os.path.abspath(path))
    candidate = os.path.join(folder, name)
    return candidate if fileio.exists(candidate) else None


def read_run_options(path):
    """(options, file) of the run_options.json beside checkpoint `path`, or ({}, None) when
    there is none; ValueError naming the file when it is not one bert_tf wrote."""
    found = beside(path, RUN_OPTIONS)
    if not found:
        return {}, None
    try:
        with fileio.open_binary(found) as f:
            options = json.loads(f.read().decode("utf-8"))["options"]
        if not isinstance(options, dict):
            raise TypeError(f"`options` is a {type(options).__name__}")
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(f"{found}: not a run_options.json as bert_tf's runners write it "
                         f"({e}); move it away or fix it") from None
    return options, found


def settings_from_run(recorded, given):
    """{setting: value} to take from a run's `recorded` options: SETTINGS and doc_stride the
    caller did not give (names in `given`), and with a stride (given or the run's; a
    run_classifier 0 means it truncated) the window settings not given."""
    taken = {name: recorded[name] for name in SETTINGS
             if name not in given and recorded.get(name) is not None}
    stride = "doc_stride" in given or recorded.get("doc_stride")
    if "doc_stride" not in given and recorded.get("doc_stride"):
        taken["doc_stride"] = recorded["doc_stride"]
    if stride:
        taken.update({name: recorded[name] for name in WINDOW_SETTINGS
                      if name not in given and recorded.get(name) is not None})
    return taken
