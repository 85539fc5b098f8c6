"""XNLI: train on the machine-translated MultiNLI of one language, evaluate on that
language's rows of the XNLI 1.0 dev/test files.

data_dir holds both unpacked downloads, as google-research/bert's XNLI instructions have it:
  multinli/multinli.train.<lang>.tsv   (XNLI-MT 1.0; header premise, hypo, label)
  xnli.dev.tsv, xnli.test.tsv          (XNLI 1.0; one row per language, `language` column)
The XNLI-MT-1.0/ and XNLI-1.0/ folders the zips unpack to are looked in too. Train labels
spell "contradictory", mapped to "contradiction" like the original. Unlike GLUE test files,
xnli.test.tsv has labels, so test examples keep them.
"""

import os

from bert_tf.data.classification.processor import DataProcessor, Layout, find_file
from bert_tf.data.classification.tasks import TASKS

XNLI_LANGUAGES = ("ar", "bg", "de", "el", "en", "es", "fr", "hi", "ru", "sw", "th", "tr",
                  "ur", "vi", "zh")


class XnliProcessor(DataProcessor):
    """XNLI for one `language` (default "zh", as google-research/bert)."""

    info = TASKS["xnli"]

    def __init__(self, language="zh", skip_bad_rows=False):
        super().__init__(skip_bad_rows=skip_bad_rows)
        if language not in XNLI_LANGUAGES:
            raise ValueError(f"unknown XNLI language {language!r}; expected one of "
                             f"{', '.join(XNLI_LANGUAGES)}")
        self.language = language

    def _layout(self, data_dir, split):
        if split == "train":
            name = f"multinli.train.{self.language}.tsv"
            path = find_file("xnli", data_dir, [os.path.join("multinli", name),
                                                os.path.join("XNLI-MT-1.0", "multinli", name)])
            return path, Layout(name, text_a=0, text_b=1, label=2,
                                label_aliases=(("contradictory", "contradiction"),))
        name = f"xnli.{split}.tsv"
        path = find_file("xnli", data_dir, [name, os.path.join("XNLI-1.0", name)])
        return path, Layout(name, text_a="sentence1", text_b="sentence2", label="gold_label",
                            where=("language", self.language))
