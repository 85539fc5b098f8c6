"""A checkpoint as bert_tf.predict reads it: the ExportOptions export_savedmodel.py would
take for it (its task from its head, config, vocabulary and labels found beside it), and the
model built from them into the serving module an export would save, whose signature functions
then run in this process (bert_tf.prediction.loading.Predictor)."""

import dataclasses
import logging
import os

from bert_tf import kinds, names
from bert_tf.checkpoints.run_options import beside as _beside
from bert_tf.jobs.export import ExportOptions, head_options, load_model, task_of_name
from bert_tf.prediction.inputs import InputError
from bert_tf.metrics.results import saved_threshold
from bert_tf.names import LABELS_FILE
from bert_tf.prediction.loading import Predictor, check_predictable, checkpoint_head, hf_labels

logger = logging.getLogger("bert_tf")


def resolve_checkpoint(path, task, settings):
    """export_savedmodel.py's ExportOptions for the checkpoint at `path`, with the task (from
    --task / --task_name, else the checkpoint's head), config, vocabulary and labels found
    (build_predictor resolves them); raises InputError naming the flag to give when something
    cannot be found."""
    from bert_tf.config import BertConfig
    try:
        found, units, fmt, location = checkpoint_head(path)
    except FileNotFoundError as e:
        raise InputError(f"--model {path}: not a SavedModel (no saved_model.pb, no numbered "
                         f"version holding one) and not a checkpoint ({e})") from None
    where = f"--model {path} ({fmt} checkpoint)"
    if settings.task_name:
        named = task_of_name(settings.task_name)
        if task not in (None, named):
            raise InputError(f"--task_name={settings.task_name} is a {named} task, but "
                             f"--task={task}")
        task = named
    if task is None:
        if found is None:
            raise InputError(f"{where}: cannot tell its task (its config.json names no "
                             f"BertFor... architecture): give --task (one of "
                             f"{', '.join(kinds.PREDICTED)})")
        if found == "encoder" and _sentence_transformers(location if fmt == "hf" else path):
            found = "embedding"
        if found == "encoder":
            raise InputError(f"{where} holds no task head, only an encoder: give --task if it "
                             f"is a fine-tuned model after all (--task=embedding for "
                             f"sentence embeddings); for per-token vectors use "
                             f"extract_features.py")
        check_predictable(found, where)
        task = found
        if task in ("classifier", "regression") and _multi_label_run(path):
            logger.info("%s: multi_label (the eval_results.txt beside it records a tuned "
                        "threshold, as run_classifier --multi_label writes it)", where)
            task = "multi_label"
    else:
        check_predictable(task, "--task")
        heads = ("classifier", "regression") if task == "multi_label" else (task,)
        if found not in (None, "encoder") + heads:
            flag = "--task_name" if settings.task_name else "--task"
            raise InputError(f"{flag} makes it a {task} model, but {where} holds a {found} head"
                             + (f" ({units} output{'s' if units != 1 else ''})"
                                if units else ""))

    if settings.bert_config_file:
        config = BertConfig.from_json_file(settings.bert_config_file)
    else:
        from bert_tf.checkpoints import find_config
        try:
            config = find_config(location if fmt == "hf" else path)
        except FileNotFoundError:
            raise InputError(f"{where}: no bert_config.json or config.json beside it: give "
                             f"--bert_config_file") from None
    vocab_file = settings.vocab_file or _beside(location if fmt == "hf" else path,
                                                names.VOCAB_ASSET)
    if not vocab_file:
        raise InputError(f"{where}: no vocab.txt beside it: give --vocab_file")
    labels = settings.labels
    labelled = kinds.get(task).labelled
    if labelled and not labels and not settings.task_name:
        saved = _beside(path, LABELS_FILE)
        if saved:
            from bert_tf.data.classification.writers import read_label_list
            labels = read_label_list(saved)
            logger.info("labels from %s: %s", saved, " ".join(labels))
        elif fmt == "hf":
            labels = hf_labels(location, units)
        if not labels:
            instead = {"classifier": f" or --task_name, or put run_classifier's {LABELS_FILE} "
                                     f"beside it",
                       "multi_label": f" (the run's --labels, else the sorted label set of its "
                                      f"training file), or put run_classifier's {LABELS_FILE} "
                                      f"beside it",
                       "tagger": f" or put run_ner's {LABELS_FILE} beside it"}[task]
            raise InputError(f"{where}: give --labels ({units or 'its'} label names in class-id "
                             f"order, comma-separated){instead}: the checkpoint does not "
                             f"record them")
    if labels and units and labelled and len(labels) != units:
        raise InputError(f"--labels: {len(labels)} labels {list(labels)}, but {where} has "
                         f"{units} classes")
    max_seq_length = settings.max_seq_length
    if max_seq_length is None:
        max_seq_length = min(384 if task == "squad" else 128, config.max_position_embeddings)
    opts = ExportOptions(
        export_dir="(in memory)", init_checkpoint=os.fspath(path), task=task,
        task_name=settings.task_name, config=config, vocab_file=vocab_file,
        do_lower_case=True if settings.do_lower_case is None else settings.do_lower_case,
        max_seq_length=max_seq_length, labels=list(labels) if labels else None,
        max_query_length=64 if settings.max_query_length is None else settings.max_query_length,
        max_answer_length=(30 if settings.max_answer_length is None
                           else settings.max_answer_length),
        window_pooling=settings.window_pooling or "mean", max_windows=settings.max_windows or 0,
        multi_label_threshold=settings.multi_label_threshold, pooling=settings.pooling,
        normalize=settings.normalize, warmup=False)
    return opts


def _sentence_transformers(location):
    """Whether `location` (a folder, or a file in one) is a sentence-transformers model."""
    from bert_tf.checkpoints.sentence_transformers import MODULES_FILE
    folder = location if os.path.isdir(location) else os.path.dirname(location)
    return os.path.isfile(os.path.join(folder, MODULES_FILE))


def _multi_label_run(path):
    """Whether the eval_results.txt beside checkpoint `path` records a multi-label threshold."""
    try:
        return saved_threshold(os.fspath(path)) is not None
    except ValueError:                  # an eval_results.txt that does not parse
        return False


def build_predictor(opts, text_pair=None, num_choices=None, doc_stride=None):
    """Predictor of the checkpoint of `opts` (resolve_checkpoint's): the task model with its
    weights, wrapped in the serving module an export would save; its signature functions run
    in this process. text_pair: the classifier/regression/multi_label model takes pairs
    (default: from --task_name, else no); num_choices: endings per multiple-choice row;
    doc_stride: SQuAD's context windows (default 128), or a classifier's, regression's or
    multi_label's long-text windows (default none: truncate), as export_savedmodel.py's."""
    from bert_tf.serving.module import ServingModule
    from bert_tf.serving.padding import length_buckets
    from bert_tf.serving.heads import make_head
    from bert_tf.tokenization import vocab as _vocab
    if opts.task_name is None or text_pair is not None:
        opts = dataclasses.replace(opts, text_pair=bool(text_pair))
    opts = dataclasses.replace(
        opts, doc_stride=doc_stride if opts.task in ("squad",) + kinds.WINDOWED else None,
        num_choices=num_choices or opts.num_choices).resolve()
    vocab = _vocab.Vocabulary.from_file(opts.vocab_file)
    if len(vocab) > opts.config.vocab_size:
        raise InputError(f"--vocab_file {opts.vocab_file}: {len(vocab)} tokens, more than the "
                         f"model's vocab_size ({opts.config.vocab_size}): wrong vocabulary for "
                         f"this model")
    model = load_model(opts)
    head = make_head(opts.task, model, vocab.id_to_token, opts.do_lower_case,
                     opts.max_seq_length, head_options(opts))
    # The length buckets bert_tf.serving.export uses.
    buckets = sorted(set(length_buckets(opts.max_seq_length))
                     | set(length_buckets(opts.config.max_position_embeddings)))
    module = ServingModule(head, opts.config, buckets)
    signatures = module.signatures(text=True)
    info = dict(head.info(), do_lower_case=bool(opts.do_lower_case),
                signatures=sorted(signatures))
    order = {names.SERVING_DEFAULT: [spec.name for spec in head.text_specs()],
             names.SERVE_FEATURES: list(names.FEATURE_KEYS)}
    predictor = Predictor(info, opts.vocab_file, signatures,
                          f"checkpoint {opts.init_checkpoint}", order)
    predictor._module = module       # keeps the model and tokenizer tables alive
    return predictor
