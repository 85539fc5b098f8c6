"""run_options.json: the options a fine-tuning run writes beside its checkpoints
(bert_tf.jobs.driver.write_run_options): a record of the command, which also tells which runner
trained a teacher (bert_tf.jobs.teachers), and, for runs written before inference.json, the
input settings of the model's contract (bert_tf.contract.read_legacy)."""

import dataclasses
import json

from bert_tf import fileio, kinds
from bert_tf.contract import beside
from bert_tf.names import RUN_OPTIONS


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
