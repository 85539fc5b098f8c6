"""run_options.json: the options a fine-tuning run writes beside its checkpoints
(bert_tf.jobs.driver.record_options), and the input settings bert_tf.predict and
export_savedmodel.py take from it when their command line does not give them: a model fed
other inputs than it was trained on (another sequence length, no windows) predicts worse
without any error."""

import dataclasses
import json
import logging
import os

from bert_tf import fileio, kinds
from bert_tf.names import RUN_OPTIONS

logger = logging.getLogger("bert_tf")

# What a checkpoint's reader takes from its run when not given; windows only with a stride.
SETTINGS = ("max_seq_length", "do_lower_case", "max_query_length", "max_answer_length",
            "pooling", "normalize")   # the last two: run_embedding's
WINDOW_SETTINGS = ("window_pooling", "max_windows")


def beside(path, name):
    """`name` in the checkpoint's folder (`path` a folder or a prefix), if it exists."""
    path = os.fspath(path)
    folder = path if fileio.isdir(path) else os.path.dirname(os.path.abspath(path))
    candidate = os.path.join(folder, name)
    return candidate if fileio.exists(candidate) else None


@dataclasses.dataclass
class RunRecord:
    """A run_options.json: the kind of model the run trained (a bert_tf.kinds name), its
    options by flag name, and the file."""

    kind: str
    options: dict
    path: str

    def serves(self, kind):
        """Whether a model of `kind` is what this run trained (a run_classifier run: any of
        classifier, regression, multi_label)."""
        return kinds.trained_together(self.kind, kind)


def read_run_options(path):
    """The RunRecord of the run_options.json beside checkpoint `path`, or None when there is
    none; ValueError naming the file when it is not one bert_tf wrote."""
    found = beside(path, RUN_OPTIONS)
    if not found:
        return None
    try:
        with fileio.open_binary(found) as f:
            data = json.loads(f.read().decode("utf-8"))
        options = data["options"]
        if not isinstance(options, dict):
            raise TypeError(f"`options` is a {type(options).__name__}")
        # Runs before bert_tf.kinds recorded the kind as "tagging", "span", "multiple-choice".
        kind = {"tagging": "tagger", "span": "squad",
                "multiple-choice": "multiple_choice"}.get(data["task"], data["task"])
        return RunRecord(str(kind), options, found)
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(f"{found}: not a run_options.json as bert_tf's runners write it "
                         f"({e}); move it away or fix it") from None


def settings_from_run(record, given, kind):
    """{setting: value} to take from `record` (a RunRecord or None) for a model of `kind`:
    SETTINGS and doc_stride not in `given` ({name: value} of the settings the caller gives),
    and, for a classifier, regression or multi_label model with a stride (the given one, else
    the run's; a run_classifier 0 means it truncated), the window settings not given, logged.
    Nothing (with a warning) when the run trained another kind: a file of a NER or SQuAD run
    beside a classifier would otherwise cut its texts into windows."""
    if record is None:
        return {}
    if not record.serves(kind):
        logger.warning("%s was written by a %s run; the model is a %s model: its options are "
                       "not used", record.path, record.kind, kind)
        return {}
    recorded = record.options
    taken = {name: recorded[name] for name in SETTINGS
             if name not in given and recorded.get(name) is not None}
    stride = given["doc_stride"] if "doc_stride" in given else recorded.get("doc_stride")
    if "doc_stride" not in given and recorded.get("doc_stride"):
        taken["doc_stride"] = recorded["doc_stride"]
    if stride and kind in kinds.WINDOWED:
        taken.update({name: recorded[name] for name in WINDOW_SETTINGS
                      if name not in given and recorded.get(name) is not None})
    if taken:
        logger.info("from %s (the run's options): %s", record.path,
                    " ".join(f"--{k}={v}" for k, v in sorted(taken.items())))
    return taken
