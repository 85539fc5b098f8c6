#!/usr/bin/env python3
"""How closely do distilled students imitate their teacher, on the data they trained on and on
data they did not see? (issue 29)

For a run_classifier teacher and students of it, scores MRPC's training and dev pairs with
each model (checkpoint in eval mode, the batching the teacher's pass uses in training) and
writes one JSON line per student and split: its accuracy, its agreement with the teacher's
labels, and the mean absolute difference between its logit margin (logit 1 - logit 0) and
the teacher's. A student that agrees on the training pairs but not on the dev pairs has
learnt the teacher where it was shown the teacher, which more (unlabelled) data can fix and
longer training cannot.

  python3 quality/teacher_agreement.py --teacher <teacher run> <student run> [...]
"""

import argparse
import os
import sys

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [REPO, os.path.join(REPO, "quality")]
from runlog import append_row, commit  # noqa: E402

RESULTS = os.path.join(REPO, "quality", "results", "teacher_agreement.jsonl")
MRPC = os.path.join(REPO, "..", "shared", "data", "glue", "MRPC")
SPLITS = ("train", "dev")


def logits(run_dir, columns, labels):
    """[N, 2] logits of the run_classifier checkpoint in `run_dir` for `columns`."""
    from bert_tf.jobs.teachers import read_teacher, teacher_targets
    model = read_teacher(run_dir, labels, False, "MRPC")
    return teacher_targets(model, columns, 64)["teacher_logits"]


def compare(student, teacher, gold):
    """Accuracy, agreement with the teacher and mean |margin difference| of `student`."""
    margin = lambda x: x[:, 1] - x[:, 0]  # noqa: E731
    return {"accuracy": float((student.argmax(1) == gold).mean()),
            "agreement": float((student.argmax(1) == teacher.argmax(1)).mean()),
            "margin_difference": float(np.abs(margin(student) - margin(teacher)).mean())}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--teacher", required=True, help="the teacher's run_classifier run")
    parser.add_argument("students", nargs="+", help="student runs of that teacher")
    parser.add_argument("--results", default=RESULTS)
    args = parser.parse_args()
    from bert_tf.data.classification.glue import MrpcProcessor
    from bert_tf.data.classification.pipeline import ExampleColumns
    processor = MrpcProcessor()
    labels = processor.get_labels()
    head = commit()
    for split in SPLITS:
        examples = processor.get_examples(MRPC, split)
        columns = ExampleColumns(examples, labels)
        gold = columns.label_ids
        teacher = logits(args.teacher, columns, labels)
        print(f"{split}: teacher accuracy {(teacher.argmax(1) == gold).mean():.4f}", flush=True)
        for student in args.students:
            values = compare(logits(student, columns, labels), teacher, gold)
            append_row(args.results, {"commit": head, "task": "mrpc", "split": split,
                                      "teacher": args.teacher, "student": student,
                                      "teacher_accuracy": float((teacher.argmax(1) == gold)
                                                                .mean()), **values})
            print(f"{split} {os.path.basename(student)}: " + ", ".join(
                f"{k} {v:.4f}" for k, v in values.items()), flush=True)


if __name__ == "__main__":
    main()
