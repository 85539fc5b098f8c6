"""Evaluation during training: the options that ask for it, and the keeper of the best weights.

Every `eval_every_steps` steps a runner evaluates its model; `BestKeeper` compares one metric
with the best so far (names ending in "loss" are minimised), keeps the best weights in
output_dir/best/ (a native checkpoint, bert_config.json, vocab.txt and eval_results.txt with
the metric, its step and `best_metric`), appends every evaluation to output_dir/
eval_history.jsonl and says when `patience` evaluations in a row brought no improvement. Both
files let a restarted run carry on where the previous one stopped.

    keeper = BestKeeper(output_dir, "f1", evaluate_fn, model=model, vocab_file=vocab,
                        patience=3, resumed_step=trainer.step)
    stop = keeper(step)              # evaluate_fn(step) -> {metric: value, ...}
"""

import atexit
import dataclasses
import json
import logging
import math
import os
import shutil
import tempfile

from bert_tf import fileio
from bert_tf.options import option

logger = logging.getLogger("bert_tf")

BEST_DIR = "best"
HISTORY_FILE = "eval_history.jsonl"
RESULTS_FILE = "eval_results.txt"


@dataclasses.dataclass(kw_only=True)
class EvaluationOptions:
    """Periodic evaluation and the best checkpoint (a mixin of the fine-tuning and pre-training
    options; needs their do_train field)."""

    eval_every_steps: int = option(
        0, "Evaluate every this many training steps (0: never) on the runner's evaluation "
        "data (dev set, --eval_file, --predict_file or --eval_input_file); the best weights "
        "are kept in output_dir/best/ and every evaluation in output_dir/eval_history.jsonl.")
    keep_best_metric: str = option(
        None, "Eval metric that picks the best checkpoint (default: the runner's main metric, "
        "see the README; names ending in 'loss' are minimised).")
    early_stopping_patience: int = option(
        0, "Stop after this many evaluations in a row without improvement (0: never).")
    load_best_at_end: bool = option(
        True, "After training with --eval_every_steps, evaluate, predict and export the best "
        "checkpoint rather than the last one.")

    def validate_evaluation(self):
        if self.eval_every_steps < 0 or self.early_stopping_patience < 0:
            raise ValueError("--eval_every_steps and --early_stopping_patience must be >= 0")
        if self.eval_every_steps and not self.do_train:
            raise ValueError("--eval_every_steps evaluates during training: it needs --do_train")
        if (self.keep_best_metric or self.early_stopping_patience) and not self.eval_every_steps:
            raise ValueError("--keep_best_metric and --early_stopping_patience need "
                             "--eval_every_steps > 0 (they act on the periodic evaluations)")


def minimised(metric):
    """Whether a smaller `metric` is better: names ending in "loss"."""
    return metric.endswith("loss")


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class BestKeeper:
    """Evaluates with evaluate_fn(step) -> {name: value} when called, keeps the best weights in
    output_dir/best/ and answers whether to stop.

    What goes into best/: `save_fn(folder)` writes the weights (default: `model` as a native
    checkpoint with bert_config.json, plus `vocab_file` as vocab.txt), `files` ({name: text, or
    a function of the evaluation's values giving the text}, e.g. a label list, the model's
    contract) are added, and eval_results.txt (the evaluation's values, global_step and
    best_metric) comes last. State
    survives a restart: the best value comes from best/eval_results.txt when it was kept for
    the same metric, the evaluations without improvement from eval_history.jsonl (entries after
    `resumed_step`, the step the run resumed from, are dropped: they will be redone).

    is_chief=False (a MultiWorkerMirroredStrategy worker other than the chief): evaluates and
    decides as the chief does (every worker must take part in the same steps; on a restart it
    reads the chief's best/ and history, so output_dir must be one every worker sees), but
    writes nothing there: it keeps its best weights in a local temporary folder (best_dir,
    removed at exit), which load_best reads without racing the chief's writes.
    """

    def __init__(self, output_dir, metric, evaluate_fn, *, model=None, vocab_file=None,
                 save_fn=None, files=None, lower_is_better=None, patience=0, resumed_step=0,
                 is_chief=True):
        if save_fn is None and model is None:
            raise ValueError("BestKeeper needs a model or a save_fn")
        self.metric, self.evaluate_fn = metric, evaluate_fn
        self.model, self.vocab_file, self.save_fn = model, vocab_file, save_fn
        self.files = dict(files or {})
        self.lower_is_better = minimised(metric) if lower_is_better is None else lower_is_better
        self.patience = patience
        self.is_chief = is_chief
        self.best_dir = os.path.join(output_dir, BEST_DIR)   # a worker's own copy, once saved
        self._own_copy = None
        self.history_path = os.path.join(output_dir, HISTORY_FILE)
        self.history = [h for h in self._read_history() if h["step"] <= resumed_step]
        self.best, self.best_step = None, None
        saved = self._saved_results()
        if saved is not None and saved.get("best_metric") == metric and metric in saved:
            self.best = float(saved[metric])
            self.best_step = int(saved["global_step"]) if "global_step" in saved else None
            logger.info("best so far: %s = %s at step %s (%s)", metric, self.best,
                        self.best_step, self.best_dir)
        self.results = {}            # step -> values of the evaluations this keeper ran

    # ------------------------------------------------------------------ state on disk
    def _saved_results(self):
        from bert_tf.metrics.results import read_eval_results
        path = os.path.join(self.best_dir, RESULTS_FILE)
        return read_eval_results(path) if fileio.exists(path) else None

    def _read_history(self):
        if not fileio.exists(self.history_path):
            return []
        with fileio.open_binary(self.history_path) as f:
            return [json.loads(line) for line in f.read().decode("utf-8").splitlines() if line]

    def _write_history(self):
        if not self.is_chief:
            return
        fileio.atomic_write_text(self.history_path,
                                 "".join(json.dumps(h) + "\n" for h in self.history))

    # ------------------------------------------------------------------ decisions
    def improves(self, value):
        """Whether `value` of the metric beats the best so far (NaN never does)."""
        if not math.isfinite(value):
            return False
        if self.best is None:
            return True
        return value < self.best if self.lower_is_better else value > self.best

    def evaluations_without_improvement(self):
        count = 0
        for entry in reversed(self.history):
            if entry["improved"]:
                break
            count += 1
        return count

    def __call__(self, step, train_values=None):
        """Evaluates at `step`, saves best/ on improvement, records the history; returns True
        when `patience` evaluations in a row have not improved (stop training)."""
        values = self.evaluate_fn(step)
        self.results[step] = values
        if self.metric not in values or self.metric == "global_step":
            raise ValueError(f"--keep_best_metric={self.metric} is not an eval metric of this "
                             f"task; choose one of "
                             f"{', '.join(sorted(k for k in values if k != 'global_step'))}")
        value = float(values[self.metric])
        improved = self.improves(value)
        if improved:
            self._save_best(step, values)
        self.history.append({"step": step, "improved": improved,
                             **{k: float(v) for k, v in values.items() if _number(v)}})
        self._write_history()
        stale = self.evaluations_without_improvement()
        logger.info("eval at step %d: %s = %.4f (best %s)%s", step, self.metric, value,
                    "none" if self.best is None else f"{self.best:.4f}",
                    "" if improved else f", {stale} evaluation(s) without improvement")
        if self.patience and stale >= self.patience:
            logger.info("early stopping at step %d: %s has not improved for %d evaluations",
                        step, self.metric, stale)
            return True
        return False

    def _save_best(self, step, values):
        # eval_results.txt last: on a URL, where best/ is replaced file by file, a restart
        # that finds it finds the whole checkpoint
        if self.is_chief:
            with fileio.atomic_dir(self.best_dir, last=(RESULTS_FILE,)) as tmp:
                self._write_best(tmp, step, values)
        else:
            tmp = tempfile.mkdtemp(prefix="bert_tf-worker-best-")
            try:
                self._write_best(tmp, step, values)
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
            if self._own_copy is None:
                atexit.register(lambda: shutil.rmtree(self._own_copy, ignore_errors=True))
            else:
                shutil.rmtree(self._own_copy, ignore_errors=True)
            self.best_dir = self._own_copy = tmp
        self.best, self.best_step = float(values[self.metric]), step
        if self.is_chief:
            logger.info("new best %s = %.4f at step %d: saved in %s", self.metric, self.best,
                        step, self.best_dir)

    def _write_best(self, folder, step, values):
        from bert_tf.metrics.results import write_eval_results
        if self.save_fn is not None:
            self.save_fn(folder)
        else:
            from bert_tf.checkpoints import save_weights
            save_weights(self.model, folder, "native", vocab_file=self.vocab_file)
        for name, text in self.files.items():
            with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
                f.write(text(values) if callable(text) else text)
        write_eval_results(os.path.join(folder, RESULTS_FILE),
                           dict({k: v for k, v in values.items() if _number(v)},
                                global_step=step, best_metric=self.metric))

    def load_best(self, model=None):
        """Loads best/ into `model` (default: the keeper's); returns the LoadReport."""
        from bert_tf.checkpoints import load_weights
        return load_weights(model if model is not None else self.model, self.best_dir)
