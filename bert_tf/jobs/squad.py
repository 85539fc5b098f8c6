"""run_squad: SQuAD v1.1 / v2.0 fine-tuning, prediction and official evaluation.

The data path and post-processing are google-research/bert's (bert_tf.data.squad); training goes
through the Trainer with a BertSpanLabeler; predictions are scored with the official metrics
(bert_tf.metrics.squad) when --do_eval is set and the predict file has answers.
--eval_every_steps scores predictions on --predict_file during training (its windows are
written to eval.tf_record once) and keeps the best weights in output_dir/best/: by default on
"f1", for SQuAD 2.0 too (the F1 at --null_score_diff_threshold, which is what predictions.json
scores; best_f1 is the F1 at the best threshold found on the same data, an optimistic value).
--teacher_checkpoint distils a fine-tuned run_squad run into this one (bert_tf.jobs.
squad_distillation; --student_layers picks the student's layers). SquadTask is its task object
for bert_tf.jobs.driver.run_task, which runs every stage.

Files in output_dir: train.tf_record (+ .meta.json, so a rerun reuses it), eval.tf_record,
predictions.json, nbest_predictions.json, null_odds.json (v2), eval_results.json, checkpoints,
best/ and eval_history.jsonl (--eval_every_steps), TensorBoard summaries (train/, eval/) and
log.txt.
"""

import dataclasses
import json
import logging
import os
import random
import time

from bert_tf import contract as _contract, fileio, kinds
from bert_tf.data.pretraining.options import PretrainingDataOptions
from bert_tf.jobs.checks import load_tokenizer
from bert_tf.jobs.distillation import TEACHER_SETTINGS, TeacherOptions
from bert_tf.jobs.results import record_eval
from bert_tf.jobs.driver import Evaluation, FinetuneTask, TrainingData, run_task
from bert_tf.jobs.finetune import FinetuneOptions
from bert_tf.options import option, option_like

logger = logging.getLogger("bert_tf")

TRAIN_RECORD = "train.tf_record"
EVAL_RECORD = "eval.tf_record"
TRAIN_SHUFFLE_SEED = 12345          # google-research shuffles training examples with this seed
DEFAULT_METRIC = "f1"               # official F1 (v2: at --null_score_diff_threshold)


@dataclasses.dataclass(kw_only=True)
class SquadOptions(FinetuneOptions, TeacherOptions):
    """run_squad's options (eval_batch_size is unused: --do_eval scores the predictions)."""

    vocab_file: str = option_like(PretrainingDataOptions, "vocab_file", required=True)
    output_dir: str = option(
        None, "Where checkpoints, features, predictions and results are written.",
        required=True)
    max_seq_length: int = option(
        kinds.get("squad").max_seq_length, "Maximum total input length after WordPiece "
        "tokenization; longer documents are "
        "split into windows, shorter ones padded.")
    do_predict: bool = option(False, "Whether to run prediction on --predict_file.")
    do_eval: bool = option(
        False, "Score the predictions with the official SQuAD metrics (needs --do_predict and "
        "answers in --predict_file): eval_results.json and TensorBoard.")
    predict_batch_size: int = option(8, "Total batch size for predictions.")
    eval_batch_size: int = 8        # not a flag: --do_eval scores the predictions
    train_file: str = option(None, "SQuAD json for training, e.g. train-v1.1.json.")
    predict_file: str = option(None, "SQuAD json for predictions, e.g. dev-v1.1.json.")
    doc_stride: int = option(_contract.DOC_STRIDE,
                             "Distance between the starts of consecutive windows.")
    max_query_length: int = option(
        _contract.MAX_QUERY_LENGTH, "Maximum question length in tokens; longer questions are "
        "truncated.")
    n_best_size: int = option(
        20, "Number of n-best predictions to keep per question in nbest_predictions.json.")
    max_answer_length: int = option(_contract.MAX_ANSWER_LENGTH,
                                    "Maximum length of a predicted answer in WordPieces.")
    verbose_logging: bool = option(
        False, "Log more features and the cases where an answer could not be mapped back to "
        "the original text.")
    version_2_with_negative: bool = option(
        False, "SQuAD 2.0: some questions have no answer in the context.")
    null_score_diff_threshold: float = option(
        0.0, "SQuAD 2.0: predict no answer when null score - best non-null score exceeds "
        "this.")
    epochs_over: str = option(
        "features", "What --num_train_epochs counts: windowed features (HuggingFace: full "
        "passes over every window) or examples (google-research: steps = questions / batch x "
        "epochs, fewer passes than epochs when contexts span several windows).",
        choices=("examples", "features"))
    skip_bad_examples: bool = option(
        False, "Skip (and count) malformed questions instead of stopping with an error.")

    serving_kind = "squad"

    def validate(self):
        """google-research's validate_flags_or_throw and the checks it lacked; raises ValueError."""
        from bert_tf.data import squad
        from bert_tf.metrics import squad as squad_metrics
        from bert_tf.tokenization import validate_case_matches_checkpoint
        validate_case_matches_checkpoint(self.do_lower_case, self.init_checkpoint)
        if self.epochs_over not in ("examples", "features"):
            raise ValueError(f"--epochs_over must be examples or features, got "
                             f"{self.epochs_over!r}")
        if not self.vocab_file:
            raise ValueError("--vocab_file is required")
        if not fileio.exists(self.vocab_file):
            raise ValueError(f"`vocab_file` {self.vocab_file} does not exist.")
        squad.validate_squad_options(
            do_train=self.do_train, do_predict=self.do_predict, train_file=self.train_file,
            predict_file=self.predict_file, max_seq_length=self.max_seq_length,
            max_query_length=self.max_query_length, doc_stride=self.doc_stride,
            max_position_embeddings=self.config.max_position_embeddings,
            n_best_size=self.n_best_size, max_answer_length=self.max_answer_length,
            do_eval=self.do_eval)
        self.validate_training()
        self.validate_evaluation()
        self.validate_export()
        self.validate_teacher(TEACHER_SETTINGS)
        if self.eval_every_steps and self.do_train:
            if not self.predict_file:
                raise ValueError("--eval_every_steps scores predictions on --predict_file: "
                                 "give one (with answers)")
            if not fileio.exists(self.predict_file):
                raise ValueError(f"`predict_file` {self.predict_file} does not exist.")
        if self.do_eval or (self.eval_every_steps and self.do_train):
            data, version = squad_metrics.load_dataset(self.predict_file)
            if not squad_metrics.has_gold_answers(data):
                flag = "--do_eval" if self.do_eval else "--eval_every_steps"
                raise ValueError(
                    f"{flag} needs gold answers, but `predict_file` {self.predict_file} has "
                    f"none (a hidden test set?): drop {flag} to only write predictions")
            if not self.version_2_with_negative and _has_unanswerable(data):
                raise ValueError(
                    f"`predict_file` {self.predict_file} (SQuAD {version or 'version unknown'}) "
                    "has unanswerable questions, which the SQuAD 1.1 metrics cannot score: "
                    "set --version_2_with_negative")


def _has_unanswerable(data):
    return any(qa.get("is_impossible") or not qa.get("answers")
               for article in data for paragraph in article["paragraphs"]
               for qa in paragraph["qas"])


# ---------------------------------------------------------------------------- features
def _fingerprint(opts):
    """What train.tf_record depends on; a rerun with the same values reuses the file."""
    def file_id(path):
        import tensorflow as tf
        stat = tf.io.gfile.stat(str(path))
        return [str(path), stat.length, stat.mtime_nsec]

    return {"train_file": file_id(opts.train_file), "vocab_file": file_id(opts.vocab_file),
            "do_lower_case": opts.do_lower_case, "max_seq_length": opts.max_seq_length,
            "doc_stride": opts.doc_stride, "max_query_length": opts.max_query_length,
            "version_2_with_negative": opts.version_2_with_negative,
            "skip_bad_examples": opts.skip_bad_examples}


def _log_feature(kind, feature):
    from bert_tf.tokenization import printable_text
    logger.info("*** %s feature %d (example %d, window %d) ***", kind, feature.unique_id,
                feature.example_index, feature.doc_span_index)
    logger.info("tokens: %s", " ".join(printable_text(t) for t in feature.tokens))
    if feature.start_position is not None:
        answer = feature.tokens[feature.start_position:feature.end_position + 1]
        logger.info("start %d end %d impossible %s answer: %s", feature.start_position,
                    feature.end_position, feature.is_impossible, " ".join(answer))


def _read_examples(opts, path, is_training):
    from bert_tf.data import squad
    result = squad.read_squad_examples(path, is_training, opts.version_2_with_negative,
                                       skip_bad=opts.skip_bad_examples)
    logger.info("%s: %d questions, %d examples (%d malformed skipped, %d answers not found)",
                path, result.num_questions, len(result.examples), len(result.skipped_bad),
                result.num_answer_not_found)
    if not result.examples:
        raise ValueError(f"{path}: no usable questions")
    return result


def write_features(opts, tokenizer, examples, path, is_training, keep=False):
    """Writes the windowed features of `examples` to `path`; returns (count, list or None)."""
    from bert_tf.data import squad
    kept = [] if keep else None
    shown = 20 if opts.verbose_logging else 1
    with squad.FeatureWriter(path, is_training) as writer:
        for feature in squad.iter_features(examples, tokenizer, opts.max_seq_length,
                                           opts.doc_stride, opts.max_query_length, is_training):
            if writer.num_features < shown:
                _log_feature("train" if is_training else "predict", feature)
            writer.process_feature(feature)
            if keep:
                kept.append(feature)
        count = writer.num_features
    return count, kept


def prepare_train_features(opts, tokenizer):
    """train.tf_record in output_dir (reused when its inputs are unchanged): the original's
    shuffled examples, windowed. Returns (num_examples, num_features)."""
    path = os.path.join(opts.output_dir, TRAIN_RECORD)
    meta_path = path + ".meta.json"
    fingerprint = _fingerprint(opts)
    if fileio.exists(path) and fileio.exists(meta_path):
        with fileio.open_binary(meta_path) as f:
            meta = json.loads(f.read().decode("utf-8"))
        if meta.get("fingerprint") == fingerprint:
            logger.info("reusing %s: %d examples, %d features", path, meta["num_examples"],
                        meta["num_features"])
            return meta["num_examples"], meta["num_features"]
        logger.info("%s was written with other settings: rewriting it", path)
    examples = _read_examples(opts, opts.train_file, True).examples
    random.Random(TRAIN_SHUFFLE_SEED).shuffle(examples)
    started = time.monotonic()
    num_features, _ = write_features(opts, tokenizer, examples, path, True)
    logger.info("wrote %s: %d examples -> %d features in %.0fs", path, len(examples),
                num_features, time.monotonic() - started)
    fileio.atomic_write_text(meta_path, json.dumps(
        {"fingerprint": fingerprint, "num_examples": len(examples),
         "num_features": num_features}, indent=2) + "\n")
    return len(examples), num_features


# ---------------------------------------------------------------------------- datasets
def _train_dataset_fn(opts, path, global_batch_size, num_features):
    """Training batches: every epoch a new permutation of all `num_features` windows."""
    from bert_tf.data import squad

    def fn(input_context):
        ds = squad.read_feature_dataset(
            path, opts.max_seq_length, True,
            input_context.get_per_replica_batch_size(global_batch_size), drop_remainder=True,
            repeat=True, shuffle_buffer=num_features, seed=opts.seed)
        if input_context.num_input_pipelines > 1:
            ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
        return ds
    return fn


def _predict_dataset_fn(opts, path):
    from bert_tf.data import squad

    def fn(input_context):
        return squad.read_feature_dataset(
            path, opts.max_seq_length, False,
            input_context.get_per_replica_batch_size(opts.predict_batch_size))
    return fn


# ---------------------------------------------------------------------------- stages
def build_model(opts):
    from bert_tf.model import BertEncoder, BertSpanLabeler
    model = BertSpanLabeler(BertEncoder(opts.config))
    # The span head reads the sequence output only: the pooler gets no gradient, so keep it
    # (and its checkpoint values) out of the optimizer.
    model.encoder.pooler.trainable = False
    return model


def predict_logits(trainer, opts, path, num_features):
    """RawResults for every feature of `path`, logging progress."""
    from bert_tf.data import squad
    from bert_tf.training.progress import format_eta
    results = []
    started = last_log = time.monotonic()
    for outputs, features in trainer.predict(_predict_dataset_fn(opts, path)):
        for unique_id, start, end in zip(features["unique_ids"], outputs["start_logits"],
                                         outputs["end_logits"]):
            results.append(squad.RawResult(int(unique_id), start, end))
        now = time.monotonic()
        if now - last_log >= 30 or len(results) == num_features:
            last_log = now
            rate = len(results) / max(now - started, 1e-9)
            logger.info("predicted %d/%d features, %.1f features/s, eta=%s", len(results),
                        num_features, rate, format_eta((num_features - len(results)) / rate))
    if len(results) != num_features:
        raise RuntimeError(f"predicted {len(results)} features, expected {num_features}")
    return results


class PredictData:
    """--predict_file's examples and their windowed features, written once to eval.tf_record
    (periodic evaluation and the final predictions read the same file)."""

    def __init__(self, opts, tokenizer):
        self.examples = _read_examples(opts, opts.predict_file, False).examples
        self.record = os.path.join(opts.output_dir, EVAL_RECORD)
        self.num_features, self.features = write_features(opts, tokenizer, self.examples,
                                                          self.record, False, keep=True)
        self.dataset = None                  # the official-metrics view of the file, on demand

    def predictions(self, opts, trainer, what="predict"):
        """SquadPredictions of the model on every example."""
        from bert_tf.data import squad
        logger.info("***** Running predictions (%s): %d examples, %d features, batch %d *****",
                    what, len(self.examples), self.num_features, opts.predict_batch_size)
        results = predict_logits(trainer, opts, self.record, self.num_features)
        return squad.compute_predictions(
            self.examples, self.features, results, opts.n_best_size, opts.max_answer_length,
            opts.do_lower_case, opts.version_2_with_negative, opts.null_score_diff_threshold,
            verbose_logging=opts.verbose_logging)

    def score(self, opts, predictions):
        """The official metrics of `predictions` (v1.1 or v2.0)."""
        from bert_tf.metrics import squad as squad_metrics
        if self.dataset is None:
            self.dataset, _ = squad_metrics.load_dataset(opts.predict_file)
        return dict(squad_metrics.evaluate(self.dataset, predictions.predictions,
                                           opts.version_2_with_negative,
                                           null_odds=predictions.null_odds))


def write_prediction_files(opts, data, predictions):
    """predictions.json, nbest_predictions.json (and null_odds.json) in output_dir; returns
    the run's "predict" info."""
    from bert_tf.data import squad
    files = {"predictions": os.path.join(opts.output_dir, "predictions.json"),
             "nbest": os.path.join(opts.output_dir, "nbest_predictions.json")}
    if opts.version_2_with_negative:
        files["null_odds"] = os.path.join(opts.output_dir, "null_odds.json")
    squad.write_predictions(predictions, files["predictions"], files["nbest"],
                            files.get("null_odds"))
    logger.info("wrote %s", ", ".join(files.values()))
    return {"num_examples": len(data.examples), "num_features": data.num_features,
            "files": files}


class SquadTask(FinetuneTask):
    """Extractive QA on SQuAD json files: the official metrics, predictions.json and
    nbest_predictions.json. The eval set is --predict_file's PredictData: --do_eval scores the
    predictions of --do_predict (google-research's flags). prepare() reads the tokenizer
    (self.tokenizer)."""

    kind = "squad"
    default_metric = DEFAULT_METRIC

    def prepare(self):
        opts = self.opts
        self.tokenizer = load_tokenizer(opts)
        if opts.teacher_checkpoint:
            from bert_tf.jobs.teachers import read_span_teacher
            self.teacher = read_span_teacher(opts.teacher_checkpoint, opts.vocab_file,
                                             opts.do_lower_case, opts.max_seq_length,
                                             opts.version_2_with_negative)
        return {}

    def training_data(self):
        opts = self.opts
        num_examples, num_features = prepare_train_features(opts, self.tokenizer)
        counted = {"examples": num_examples, "features": num_features}[opts.epochs_over]
        path = os.path.join(opts.output_dir, TRAIN_RECORD)
        dataset_fn = _train_dataset_fn(opts, path, opts.train_batch_size, num_features)
        if self.teacher is not None:
            dataset_fn = self._with_teacher(dataset_fn, path, num_features)
        return TrainingData(dataset_fn, counted, opts.epochs_over,
                            f"{num_examples} examples, {num_features} features")

    def _with_teacher(self, dataset_fn, path, num_features):
        """`dataset_fn` with the teacher's start and end logits of each window
        (teacher_outputs, keyed by the training file's .meta.json)."""
        from bert_tf.jobs.squad_distillation import teacher_span_logits, window_row
        from bert_tf.jobs.teachers import with_teacher_targets
        opts = self.opts
        with fileio.open_binary(path + ".meta.json") as f:
            record = json.loads(f.read().decode("utf-8"))
        targets = self.teacher_outputs(
            {"record": record, "shape": [num_features, opts.max_seq_length]},
            lambda: teacher_span_logits(self.teacher, path, num_features, opts.max_seq_length,
                                        opts.predict_batch_size))
        return with_teacher_targets(dataset_fn, targets, row=window_row)

    def loss(self, training):
        if self.teacher is not None:
            from bert_tf.objectives.distillation import SpanDistillationObjective
            return SpanDistillationObjective(self.opts.distill_temperature,
                                             self.opts.distill_alpha)
        from bert_tf.objectives.span import SpanObjective
        return SpanObjective()

    def build_model(self):
        return build_model(self.opts)

    def needs_eval_data(self, periodic):
        return self.opts.do_predict or periodic

    def load_eval_data(self):
        return PredictData(self.opts, self.tokenizer)

    def evaluate(self, trainer, step, eval_set):
        predictions = eval_set.predictions(self.opts, trainer, f"eval@{step}")
        return Evaluation(step, eval_set.score(self.opts, predictions), predictions)

    def record_evaluation(self, trainer, evaluation, eval_set, summarized):
        from bert_tf.metrics import squad as squad_metrics
        return record_eval(self.opts, evaluation.step, dict(evaluation.metrics),
                           filename="eval_results.json", writer=squad_metrics.write_eval_results,
                           summary_keys=[] if summarized else None)

    def predict(self, trainer, evaluation, eval_set, decision):
        artifact = evaluation.artifact if evaluation else None
        predictions = artifact or eval_set.predictions(self.opts, trainer)
        return write_prediction_files(self.opts, eval_set, predictions)

    def contract(self, decision=None):
        opts = self.opts
        return opts.contract(max_query_length=opts.max_query_length,
                             max_answer_length=opts.max_answer_length,
                             doc_stride=opts.doc_stride)


def run(opts, strategy):
    """Trains and/or predicts (and evaluates), then exports with --export_dir
    (bert_tf.jobs.driver.run_task); returns {"train", "predict", "eval", "export"} (None when
    not run). A preempted training run returns before predicting; rerun to resume."""
    return run_task(SquadTask(opts), strategy)
