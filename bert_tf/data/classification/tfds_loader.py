"""The GLUE tasks from tensorflow-datasets (`glue/<config>`), as the same InputExamples and
label strings the file processors produce, for machines that can download (download=True)
or that hold a prepared TFDS data_dir.

TFDS's class i is GLUE's label i for the 0/1 tasks; MNLI, AX, QNLI and RTE use TFDS's class
names, which are GLUE's label strings. Test labels (hidden, -1 in TFDS) become None.
Examples come back in GLUE file order (TFDS's idx), so test positions are GLUE indices.
"""

import logging

from bert_tf.data.classification.examples import BadRowError, InputExample
from bert_tf.data.classification.tasks import canonical_task_name, get_task_info

logger = logging.getLogger(__name__)

_STANDARD = {"train": "train", "dev": "validation", "test": "test"}
_NLI_NAMES = ("entailment", "neutral", "contradiction")
_ENTAILMENT_NAMES = ("entailment", "not_entailment")

# task: (TFDS builder, our split -> TFDS split, (text_a key, text_b key), TFDS class names or
# None when class i is label str(i))
TFDS_TASKS = {
    "cola": ("glue/cola", _STANDARD, ("sentence", None), None),
    "sst-2": ("glue/sst2", _STANDARD, ("sentence", None), None),
    "mrpc": ("glue/mrpc", _STANDARD, ("sentence1", "sentence2"), None),
    "sts-b": ("glue/stsb", _STANDARD, ("sentence1", "sentence2"), None),
    "qqp": ("glue/qqp", _STANDARD, ("question1", "question2"), None),
    "mnli": ("glue/mnli", {"train": "train", "dev": "validation_matched",
                           "test": "test_matched"}, ("premise", "hypothesis"), _NLI_NAMES),
    "mnli-mm": ("glue/mnli", {"train": "train", "dev": "validation_mismatched",
                              "test": "test_mismatched"}, ("premise", "hypothesis"), _NLI_NAMES),
    "qnli": ("glue/qnli", _STANDARD, ("question", "sentence"), _ENTAILMENT_NAMES),
    "rte": ("glue/rte", _STANDARD, ("sentence1", "sentence2"), _ENTAILMENT_NAMES),
    "wnli": ("glue/wnli", _STANDARD, ("sentence1", "sentence2"), None),
    "ax": ("glue/ax", {"test": "test"}, ("premise", "hypothesis"), _NLI_NAMES),
}

_TFDS_NAME_TO_TASK = {"glue/mnli_matched": "mnli", "glue/mnli_mismatched": "mnli-mm"}


def task_for_tfds_name(name):
    """'glue/sst2' (or a task name such as 'sst-2') -> our canonical task name."""
    name = str(name).strip().lower()
    if name in _TFDS_NAME_TO_TASK:
        return _TFDS_NAME_TO_TASK[name]
    for task, (builder, *_rest) in TFDS_TASKS.items():
        if name == builder:
            return task
    if name.startswith("glue/"):
        known = sorted({spec[0] for spec in TFDS_TASKS.values()} | set(_TFDS_NAME_TO_TASK))
        raise ValueError(f"unsupported TFDS name {name!r}; supported: {', '.join(known)}")
    task = canonical_task_name(name)
    if task not in TFDS_TASKS:
        raise ValueError(f"{task} is not read from TFDS; supported tasks: "
                         f"{', '.join(TFDS_TASKS)}")
    return task


def tfds_source(task_or_tfds_name, split):
    """(TFDS builder name, TFDS split) holding `split` ('train'/'dev'/'test') of the task."""
    task = task_for_tfds_name(task_or_tfds_name)
    builder, splits, _, _ = TFDS_TASKS[task]
    if split not in splits:
        raise ValueError(f"{task} has no {split} split in TFDS (only {', '.join(splits)})")
    return builder, splits[split]


def load_tfds_examples(task_or_tfds_name, split, data_dir=None, download=False,
                       skip_bad_rows=False):
    """[InputExample] for `split` of a GLUE task read through tfds.load.

    Without download=True the dataset must already be prepared under data_dir (TFDS's
    default folder when None); otherwise a FileNotFoundError says how to prepare it.
    """
    import tensorflow_datasets as tfds

    task = task_for_tfds_name(task_or_tfds_name)
    builder, tfds_split = tfds_source(task, split)
    _, _, (key_a, key_b), class_names = TFDS_TASKS[task]
    info = get_task_info(task)
    try:
        dataset = tfds.load(builder, split=tfds_split, data_dir=data_dir, download=download)
    except AssertionError as e:  # what tfds.load raises for data that is not prepared
        raise FileNotFoundError(
            f"TFDS dataset {builder} is not prepared in {data_dir or 'the default TFDS folder'} "
            f"and download=False; prepare it where there is internet (`tfds build {builder} "
            f"--data_dir DIR`) and pass DIR as data_dir, or pass download=True. ({e})") from None
    source = f"tfds:{builder}[{tfds_split}]"
    rows, skipped = [], 0
    for record in tfds.as_numpy(dataset):
        idx = int(record["idx"])
        texts = [record[key].decode("utf-8") if key else None for key in (key_a, key_b)]
        if any(text is not None and not text.strip() for text in texts):
            if not skip_bad_rows:
                raise BadRowError(source, f"idx {idx}", "empty text")
            skipped += 1
            continue
        label = None
        if split != "test":
            value = record["label"]
            if info.is_regression:
                label = float(value)
            else:
                label = class_names[int(value)] if class_names else str(int(value))
        rows.append((idx, InputExample(guid=f"{split}-{idx}", text_a=texts[0],
                                       text_b=texts[1], label=label)))
    if skipped:
        logger.warning("%s: skipped %d example(s) with empty text", source,
                       skipped)
    rows.sort(key=lambda row: row[0])  # idx is the row of GLUE's file: restore its order
    return [example for _, example in rows]
