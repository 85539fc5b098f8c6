"""Training curves (bert_tf.plots, `python -m bert_tf.plot_metrics`) from TensorBoard events as
the runners write them, and as google-research's Estimator wrote them."""

import os

import pytest
import tensorflow as tf

from bert_tf import plot_metrics, plots


def _write_tf2(folder, step_values):
    writer = tf.summary.create_file_writer(str(folder))
    with writer.as_default():
        for step, values in step_values:
            for tag, value in values.items():
                tf.summary.scalar(tag, value, step=step)
    writer.close()


def _write_estimator_style(folder, points):
    """TF1 `simple_value` events written as Estimator did (in the run folder itself)."""
    os.makedirs(folder, exist_ok=True)
    with tf.io.TFRecordWriter(os.path.join(folder, "events.out.tfevents.1.host")) as writer:
        for step, tag, value in points:
            event = tf.compat.v1.Event(step=step, summary=tf.compat.v1.Summary(
                value=[tf.compat.v1.Summary.Value(tag=tag, simple_value=value)]))
            writer.write(event.SerializeToString())


@pytest.fixture
def run_dir(tmp_path):
    run = tmp_path / "classifier"
    _write_tf2(run / "train", [(s, {"loss": 1.0 / s, "accuracy": 0.3 * s,
                                    "learning_rate": 1e-4 * s, "steps_per_sec": 5.0})
                               for s in (1, 2, 3)])
    # A resumed run writes step 3 again in a newer file: the later value wins.
    _write_tf2(run / "train", [(3, {"loss": 0.25})])
    _write_tf2(run / "eval", [(3, {"eval_accuracy": 0.75, "eval_loss": 0.5, "loss": 0.5,
                                   "global_step": 3.0})])
    return run


def test_scalars_are_read_and_the_last_write_of_a_step_wins(run_dir):
    groups = plots.read_run(str(run_dir))
    assert set(groups) == {"train", "eval"}
    train = groups["train"]
    assert train["loss"] == [(1, 1.0), (2, 0.5), (3, 0.25)]
    steps, rates = zip(*train["learning_rate"])
    assert steps == (1, 2, 3) and rates == pytest.approx([1e-4, 2e-4, 3e-4])
    assert groups["eval"]["eval_accuracy"] == [(3, 0.75)]


def test_curves_go_to_their_panel_once(run_dir):
    panels = plots.curves(plots.read_run(str(run_dir)))
    labels = {panel: [label for label, _, _ in items] for panel, items in panels.items()}
    assert labels == {"loss": ["train/loss", "eval/eval_loss"],    # eval "loss" is a duplicate
                      "accuracy": ["train/accuracy", "eval/eval_accuracy"],
                      "learning rate": ["train/learning_rate"]}
    assert [is_eval for _, _, is_eval in panels["accuracy"]] == [False, True]


@pytest.mark.parametrize("tag,panel", [
    ("loss", "loss"), ("masked_lm_loss", "loss"), ("loss_next_sentence", "loss"),
    ("masked_lm_accuracy", "accuracy"), ("f1", "accuracy"), ("mcc", "accuracy"),
    ("exact_match", "accuracy"), ("learning_rate", "learning rate"),
    ("steps_per_sec", None), ("global_step/sec", None), ("loss_scale", None)])
def test_panel_of_tag(tag, panel):
    assert plots.panel_of(tag) == panel


def test_cli_writes_a_png_for_several_runs(run_dir, tmp_path, capsys):
    google = tmp_path / "google_run"
    _write_estimator_style(google, [(100, "loss", 3.0), (200, "loss", 2.0)])
    _write_estimator_style(google / "eval", [(200, "masked_lm_accuracy", 0.4)])
    out = tmp_path / "curves.png"
    assert plot_metrics.main([str(run_dir), str(google), f"--output={out}"]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    printed = capsys.readouterr().out
    assert f"wrote {out}" in printed
    assert plots.read_run(str(google))["train"]["loss"] == [(100, 3.0), (200, 2.0)]


def test_cli_names_a_folder_without_events(tmp_path, capsys):
    assert plot_metrics.main([str(tmp_path)]) == 1
    assert f"{tmp_path}: no TensorBoard event files" in capsys.readouterr().err
