"""Processors for the GLUE tasks, reading the folders GLUE's download_glue_data.py writes.

data_dir is the task's folder (glue_data/MRPC ...), as in google-research/bert. Columns are
found by their header names, so a file of the wrong task fails with the column it lacks.
Test files have no labels: their examples have label None and guid "test-<index>".
"""

import os

from bert_tf import fileio
from bert_tf.data.classification.processor import DataProcessor, Layout, find_file
from bert_tf.data.classification.tasks import TASKS

# Folder names download_glue_data.py uses, for the "did you mean" hint.
_GLUE_FOLDERS = {"cola": "CoLA", "sst-2": "SST-2", "mrpc": "MRPC", "sts-b": "STS-B",
                 "qqp": "QQP", "mnli": "MNLI", "mnli-mm": "MNLI", "qnli": "QNLI", "rte": "RTE",
                 "wnli": "WNLI", "ax": "diagnostic"}


def _pair_layouts(text_a, text_b, label, guid="index", dev="dev.tsv", test="test.tsv",
                  train="train.tsv"):
    labelled = dict(text_a=text_a, text_b=text_b, label=label, guid=guid)
    return {"train": Layout(train, **labelled), "dev": Layout(dev, **labelled),
            "test": Layout(test, text_a=text_a, text_b=text_b, guid=guid)}


class GlueProcessor(DataProcessor):
    """A GLUE task: `layouts` maps each split to its file's Layout."""

    layouts = {}

    def _layout(self, data_dir, split):
        if split not in self.layouts:
            raise ValueError(f"{self.info.name} has no {split} set (only "
                             f"{', '.join(self.layouts)})")
        layout = self.layouts[split]
        folder = _GLUE_FOLDERS[self.info.name]
        hint = ""
        if fileio.exists(os.path.join(str(data_dir), folder, layout.filename)):
            hint = (f"; data_dir must be the task folder: did you mean "
                    f"{os.path.join(str(data_dir), folder)}?")
        return find_file(self.info.name, data_dir, [layout.filename], hint), layout


class ColaProcessor(GlueProcessor):
    """CoLA: train/dev have no header (source, label, original label, sentence)."""

    info = TASKS["cola"]
    layouts = {
        "train": Layout("train.tsv", text_a=3, label=1, header=False, width=4),
        "dev": Layout("dev.tsv", text_a=3, label=1, header=False, width=4),
        "test": Layout("test.tsv", text_a="sentence", guid="index"),
    }


class Sst2Processor(GlueProcessor):
    info = TASKS["sst-2"]
    layouts = {
        "train": Layout("train.tsv", text_a="sentence", label="label"),
        "dev": Layout("dev.tsv", text_a="sentence", label="label"),
        "test": Layout("test.tsv", text_a="sentence", guid="index"),
    }


class MrpcProcessor(GlueProcessor):
    """MRPC: train/dev start with a UTF-8 BOM and have no index column."""

    info = TASKS["mrpc"]
    layouts = _pair_layouts("#1 String", "#2 String", "Quality", guid=None)
    layouts["test"] = Layout("test.tsv", text_a="#1 String", text_b="#2 String", guid="index")


class StsbProcessor(GlueProcessor):
    """STS-B: regression on the `score` column (0-5); labels are floats."""

    info = TASKS["sts-b"]
    layouts = _pair_layouts("sentence1", "sentence2", "score")


class QqpProcessor(GlueProcessor):
    info = TASKS["qqp"]
    layouts = _pair_layouts("question1", "question2", "is_duplicate", guid="id")


class MnliProcessor(GlueProcessor):
    """MNLI matched dev/test. The mismatched sets are the `mnli-mm` task (same data_dir)."""

    info = TASKS["mnli"]
    layouts = _pair_layouts("sentence1", "sentence2", "gold_label", dev="dev_matched.tsv",
                            test="test_matched.tsv")


class MnliMismatchedProcessor(GlueProcessor):
    info = TASKS["mnli-mm"]
    layouts = _pair_layouts("sentence1", "sentence2", "gold_label", dev="dev_mismatched.tsv",
                            test="test_mismatched.tsv")


class QnliProcessor(GlueProcessor):
    info = TASKS["qnli"]
    layouts = _pair_layouts("question", "sentence", "label")


class RteProcessor(GlueProcessor):
    info = TASKS["rte"]
    layouts = _pair_layouts("sentence1", "sentence2", "label")


class WnliProcessor(GlueProcessor):
    info = TASKS["wnli"]
    layouts = _pair_layouts("sentence1", "sentence2", "label")


class AxProcessor(GlueProcessor):
    """The GLUE diagnostic set (AX): test only, predicted with an MNLI model.

    data_dir may be the `diagnostic` folder or the MNLI folder beside it."""

    info = TASKS["ax"]
    layouts = {"test": Layout("diagnostic.tsv", text_a="sentence1", text_b="sentence2",
                              guid="index")}

    def _layout(self, data_dir, split):
        if split != "test":
            raise ValueError("ax (GLUE diagnostic) has only a test set")
        layout = self.layouts["test"]
        path = find_file("ax", data_dir, ["diagnostic.tsv",
                                          os.path.join("..", "diagnostic", "diagnostic.tsv")])
        return path, layout
