"""What the runner needs to know about each task besides its rows: labels, regression or not,
which metric decides "best", and the file name the GLUE server expects for its predictions."""

import dataclasses

MNLI_LABELS = ("contradiction", "entailment", "neutral")  # google-research's order
BINARY_LABELS = ("0", "1")
ENTAILMENT_LABELS = ("entailment", "not_entailment")


@dataclasses.dataclass(frozen=True)
class TaskInfo:
    """name: canonical task name (lower case, as --task_name takes it).
    labels: label strings in label-id order (empty for regression).
    metric_task: the name bert_tf.metrics.classification.compute_metrics takes.
    primary_metric: the compute_metrics key to select the best checkpoint by.
    submission_file: GLUE server file name for test predictions, None outside GLUE.
    companions: tasks evaluated/predicted with the same fine-tuned model (MNLI's mismatched
      sets and the AX diagnostic), read from the same data_dir.
    """

    name: str
    labels: tuple
    is_regression: bool = False
    metric_task: str = None
    primary_metric: str = "eval_accuracy"
    submission_file: str = None
    companions: tuple = ()

    @property
    def num_labels(self):
        """Output units of the classifier head: 1 for regression."""
        return 1 if self.is_regression else len(self.labels)


def _glue(name, labels, submission, **kwargs):
    return TaskInfo(name=name, labels=labels, metric_task=name, submission_file=submission,
                    **kwargs)


TASKS = {
    "cola": _glue("cola", BINARY_LABELS, "CoLA.tsv", primary_metric="mcc"),
    "sst-2": _glue("sst-2", BINARY_LABELS, "SST-2.tsv"),
    "mrpc": _glue("mrpc", BINARY_LABELS, "MRPC.tsv", primary_metric="acc_and_f1"),
    "sts-b": _glue("sts-b", (), "STS-B.tsv", is_regression=True, primary_metric="corr"),
    "qqp": _glue("qqp", BINARY_LABELS, "QQP.tsv", primary_metric="acc_and_f1"),
    "mnli": _glue("mnli", MNLI_LABELS, "MNLI-m.tsv", companions=("mnli-mm", "ax")),
    "mnli-mm": _glue("mnli-mm", MNLI_LABELS, "MNLI-mm.tsv"),
    "qnli": _glue("qnli", ENTAILMENT_LABELS, "QNLI.tsv"),
    "rte": _glue("rte", ENTAILMENT_LABELS, "RTE.tsv"),
    "wnli": _glue("wnli", BINARY_LABELS, "WNLI.tsv"),
    "ax": _glue("ax", MNLI_LABELS, "AX.tsv"),
    "xnli": TaskInfo(name="xnli", labels=MNLI_LABELS, metric_task="xnli"),
}

# GLUE tasks with one text per example; every other named task classifies pairs.
SINGLE_TEXT_TASKS = ("cola", "sst-2")

_ALIASES = {
    "sst2": "sst-2", "stsb": "sts-b", "mnli-m": "mnli", "mnli-matched": "mnli",
    "mnli-mismatched": "mnli-mm", "diagnostic": "ax",
}


def canonical_task_name(name):
    """'SST-2', 'sst2', 'MNLI_mismatched' ... -> the TASKS key; ValueError if unknown."""
    key = str(name).strip().lower().replace("_", "-")
    key = _ALIASES.get(key, key)
    if key not in TASKS:
        raise ValueError(f"unknown task {name!r}; known tasks: {', '.join(sorted(TASKS))} "
                         f"(or 'generic' for your own TSV/CSV/JSONL files)")
    return key


def get_task_info(name):
    return TASKS[canonical_task_name(name)]
