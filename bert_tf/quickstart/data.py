"""The quickstart's data, harvested at run time from the installed Python standard library.

  python -m bert_tf.quickstart.data --output_dir=quickstart_out/data

Writes, in OUTPUT_DIR:
  pretrain.txt   pre-training text (one sentence per line, blank line between documents)
  heldout.txt    held-out documents (about --heldout_fraction of them) for evaluation
  task/{train,dev,test}.tsv   which of --packages a sentence comes from (run_classifier.py
                 --task_name=generic --text_a_column=sentence --label_column=package)
  summary.json   what was written (written last: its presence means the stage is done)
"""

import argparse
import hashlib
import json
import os
import sys

from bert_tf import fileio
from bert_tf.data import docstrings
from bert_tf.quickstart import task

DEFAULT_PACKAGES = ("asyncio", "email", "tkinter")


def _held_out(doc, fraction):
    digest = hashlib.sha1(doc.name.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2.0 ** 64 < fraction


def make_data(output_dir, packages=DEFAULT_PACKAGES, heldout_fraction=0.05,
              corpus_packages=None, max_per_label=None, max_train_per_label=None):
    """Harvests the docstrings, writes the files listed in the module docstring; returns the
    summary. corpus_packages limits the corpus to those top-level packages (None: all)."""
    if not 0 < heldout_fraction < 0.5:
        raise ValueError(f"heldout_fraction must be in (0, 0.5), got {heldout_fraction}")
    wanted = None
    if corpus_packages:
        wanted = set(corpus_packages) | set(packages)
    docs = docstrings.harvest(packages=wanted)
    if not docs:
        raise ValueError(f"no docstrings found under {docstrings.stdlib_dir()}")
    missing = sorted(set(packages) - {d.package for d in docs})
    if missing:
        raise ValueError(f"--packages: {', '.join(missing)} not found in the standard library "
                         f"at {docstrings.stdlib_dir()}")
    heldout = [d for d in docs if _held_out(d, heldout_fraction)]
    train = [d for d in docs if not _held_out(d, heldout_fraction)]
    splits = task.build_task(docs, packages, max_per_label=max_per_label,
                             max_train_per_label=max_train_per_label)
    summary = {
        "python": docstrings.python_version(), "stdlib": docstrings.stdlib_dir(),
        "pretrain": docstrings.write_corpus(train, os.path.join(output_dir, "pretrain.txt")),
        "heldout": docstrings.write_corpus(heldout, os.path.join(output_dir, "heldout.txt")),
        "task": {"packages": list(packages),
                 "examples": task.write_task(splits, os.path.join(output_dir, "task"))},
    }
    fileio.atomic_write_text(os.path.join(output_dir, "summary.json"),
                             json.dumps(summary, indent=2) + "\n")
    return summary


def describe(summary):
    """The summary in a few lines."""
    corpus_, heldout = summary["pretrain"], summary["heldout"]
    lines = [f"Python {summary['python']} standard library ({summary['stdlib']}):",
             f"  pretrain.txt: {corpus_['documents']} documents, {corpus_['sentences']} "
             f"sentences, {corpus_['words']:,} words ({corpus_['bytes'] / 1e6:.2f} MB)",
             f"  heldout.txt: {heldout['documents']} documents, {heldout['sentences']} sentences"]
    for split, counts in summary["task"]["examples"].items():
        lines.append(f"  task/{split}.tsv: {sum(counts.values())} sentences ("
                     + ", ".join(f"{k} {v}" for k, v in counts.items()) + ")")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bert_tf.quickstart.data",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output_dir", required=True, help="folder to write")
    parser.add_argument("--packages", default=",".join(DEFAULT_PACKAGES),
                        help="comma-separated stdlib packages to classify (default: %(default)s)")
    parser.add_argument("--heldout_fraction", type=float, default=0.05,
                        help="share of documents kept out of pretrain.txt (default: %(default)s)")
    parser.add_argument("--corpus_packages", default=None,
                        help="comma-separated top-level packages the corpus is limited to "
                             "(default: the whole standard library)")
    parser.add_argument("--max_per_label", type=int, default=None,
                        help="at most this many sentences per package (default: all usable)")
    parser.add_argument("--max_train_per_label", type=int, default=None,
                        help="at most this many training sentences per package; dev and test "
                             "stay as they are (default: all)")
    args = parser.parse_args(argv)
    split = lambda value: [p.strip() for p in value.split(",") if p.strip()]  # noqa: E731
    try:
        summary = make_data(args.output_dir, split(args.packages), args.heldout_fraction,
                            split(args.corpus_packages) if args.corpus_packages else None,
                            args.max_per_label, args.max_train_per_label)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(describe(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
