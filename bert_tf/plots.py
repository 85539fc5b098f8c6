"""Training curves from TensorBoard event files: loss, accuracy (and other quality metrics) and
learning rate of one or more runs, drawn with matplotlib into a PNG.

Reads what bert_tf's runners write (`<output_dir>/train` every iterations_per_loop steps,
`<output_dir>/eval` after evaluations) and also google-research/bert's Estimator layout (train
events in `<output_dir>` itself, eval events in `<output_dir>/eval`), TF1 `simple_value` and
TF2 tensor summaries alike. A run resumed after an interruption rewrites some steps: the value
written last for a step wins.
"""

import collections
import math
import os
import re

from bert_tf import fileio

EVENT_FILE = re.compile(r"^events\.out\.tfevents\.")
PANELS = ("loss", "accuracy", "learning rate")
_METRIC = re.compile(r"(accuracy|(^|_)acc($|_)|(^|_)f1$|mcc|corr|pearson|spearman|exact)")


def event_dirs(run_dir):
    """{group name: folder} of the folders in run_dir (itself and below) holding event files.
    The run_dir itself is named "train" (the Estimator layout), a sub-folder by its path."""
    found = {}
    for folder, dirs, files in os.walk(run_dir):
        dirs.sort()
        if any(EVENT_FILE.match(name) for name in files):
            rel = os.path.relpath(folder, run_dir)
            found["train" if rel == "." else rel.replace(os.sep, "/")] = folder
    return found


def _scalar(value):
    """A summary value as a Python float, or None when it is not a scalar."""
    import tensorflow as tf
    if value.HasField("simple_value"):
        return float(value.simple_value)
    if value.HasField("tensor"):
        array = tf.make_ndarray(value.tensor)
        if array.size == 1 and array.dtype.kind in "fiub":
            return float(array.reshape(()))
    return None


def read_scalars(folder):
    """{tag: [(step, value)] sorted by step} of every scalar in the folder's event files. When
    a step was written more than once (a resumed run), the value written last (by the events'
    wall time) wins."""
    import tensorflow as tf
    latest = collections.defaultdict(dict)            # tag -> step -> (wall_time, value)
    for name in sorted(n for n in os.listdir(folder) if EVENT_FILE.match(n)):
        records = tf.data.TFRecordDataset(os.path.join(folder, name))
        for event in map(tf.compat.v1.Event.FromString, records.as_numpy_iterator()):
            for value in event.summary.value:
                number = _scalar(value)
                if number is None:
                    continue
                step = int(event.step)
                seen = latest[value.tag].get(step)
                if seen is None or event.wall_time >= seen[0]:
                    latest[value.tag][step] = (event.wall_time, number)
    return {tag: [(step, v) for step, (_, v) in sorted(points.items())]
            for tag, points in sorted(latest.items())}


def read_run(run_dir):
    """{group: {tag: [(step, value)]}} of a run's output folder; raises FileNotFoundError
    naming the folder when it holds no event files."""
    if not os.path.isdir(run_dir):
        raise FileNotFoundError(f"{run_dir}: no such folder")
    groups = {group: read_scalars(folder) for group, folder in event_dirs(run_dir).items()}
    if not groups:
        raise FileNotFoundError(f"{run_dir}: no TensorBoard event files (events.out.tfevents.*) "
                                f"in it or below it")
    return groups


def panel_of(tag):
    """Which panel a tag is drawn in ("loss", "accuracy", "learning rate"), or None."""
    name = tag.rsplit("/", 1)[-1].lower()
    if "learning_rate" in name or name in ("lr", "learningrate"):
        return "learning rate"
    if _METRIC.search(name):
        return "accuracy"
    if name == "loss_scale":                  # fp16 loss scaling, not a loss
        return None
    if name == "loss" or name.endswith("_loss") or name.startswith("loss_"):
        return "loss"
    return None


def _same(a, b):
    return (len(a) == len(b) and all(sa == sb and math.isclose(va, vb, rel_tol=1e-4, abs_tol=1e-6)
                                     for (sa, va), (sb, vb) in zip(a, b)))


def curves(groups):
    """{panel: [(label, points, is_eval)]} for one run; within a group, series equal to one
    already kept (e.g. eval "loss" and "eval_loss") are left out."""
    out = {panel: [] for panel in PANELS}
    for group in sorted(groups, key=lambda g: (g != "train", g)):
        kept = []
        for tag, points in groups[group].items():
            panel = panel_of(tag)
            if panel is None or not points or any(_same(points, p) for p in kept):
                continue
            if panel == "learning rate" and group != "train":
                continue
            kept.append(points)
            out[panel].append((f"{group}/{tag}", points, group != "train"))
    return out


def plot_runs(run_dirs, output_file, title=None):
    """Draws one row of panels (loss, accuracy, learning rate) per run into a PNG, written
    atomically. Returns {"path", "runs": {run_dir: {panel: number of curves}}}."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = [(run_dir, curves(read_run(run_dir))) for run_dir in run_dirs]
    fig, axes = plt.subplots(len(runs), len(PANELS), figsize=(5 * len(PANELS), 3.6 * len(runs)),
                             squeeze=False)
    summary = {}
    for row, (run_dir, panels) in enumerate(runs):
        run_name = os.path.basename(os.path.normpath(run_dir))
        summary[run_dir] = {panel: len(items) for panel, items in panels.items()}
        for col, panel in enumerate(PANELS):
            ax = axes[row][col]
            for label, points, is_eval in panels[panel]:
                steps, values = zip(*points)
                if is_eval:
                    ax.plot(steps, values, marker="o", linestyle="--", label=label)
                else:
                    ax.plot(steps, values, label=label)
            ax.set_title(f"{run_name}: {panel}")
            ax.set_xlabel("step")
            ax.grid(True, alpha=0.3)
            if panels[panel]:
                ax.legend(fontsize=7)
            else:
                ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes)
            if panel == "learning rate":
                ax.ticklabel_format(axis="y", style="sci", scilimits=(-2, 2))
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    with fileio.atomic_path(output_file) as tmp:
        fig.savefig(tmp, format="png", dpi=100)
    plt.close(fig)
    return {"path": os.fspath(output_file), "runs": summary}
