"""run_embedding: contrastive or similarity fine-tuning of a sentence-embedding model
(BertEmbedder: the encoder's tokens pooled into one vector), its evaluation, the embeddings of a
file, and the export.

Losses (bert_tf.objectives.embedding): --loss=mnrl, in-batch negatives over (anchor,
positive[, negative]) rows as sentence-transformers' MultipleNegativesRankingLoss (--scale,
--symmetric; the negatives of an anchor are the other rows of its replica's batch, so
--gradient_accumulation_steps is refused); --loss=cosine, the squared error between the cosine
similarity of (text_a, text_b) and score / --max_score, as CosineSimilarityLoss.

Evaluation (--eval_type): retrieval over (anchor, positive) rows of --eval_file, each distinct
anchor a query whose relevant texts are its positives, searching the distinct positives and
the texts of --corpus_file (mrr_at_10, recall_at_1, recall_at_10, ndcg_at_10; the best
checkpoint on mrr_at_10); or sts over (text_a, text_b, score) rows (spearman and pearson of the
cosine similarities; the best checkpoint on spearman).

Pooling: --pooling and --normalize, else what a sentence-transformers --init_checkpoint folder
says (modules.json, 1_Pooling/config.json), else mean without normalisation.

Files in output_dir: eval_results.txt, predictions.jsonl (--do_predict: {"text", "embedding"}
per row of --predict_file), checkpoints, best/ and eval_history.jsonl (--eval_every_steps),
TensorBoard summaries and log.txt.
"""

import dataclasses
import json
import logging
import os

from bert_tf import fileio
from bert_tf.jobs.driver import Evaluation, FinetuneTask, TrainingData, run_task
from bert_tf.jobs.finetune import FileFinetuneOptions, predict_logits
from bert_tf.jobs.options import TrainingOptions
from bert_tf.names import POOLING_MODES
from bert_tf.options import option, option_like

logger = logging.getLogger("bert_tf")

LOSSES = ("mnrl", "cosine")
EVAL_TYPES = ("retrieval", "sts")
DEFAULT_METRICS = {"retrieval": "mrr_at_10", "sts": "spearman"}


@dataclasses.dataclass(kw_only=True)
class EmbeddingOptions(FileFinetuneOptions):
    train_file: str = option(
        None, "Rows to train on (.tsv/.csv with a header, or .jsonl): anchor, positive and "
        "optionally negative columns for --loss=mnrl; text_a, text_b (or sentence1, sentence2) "
        "and score for --loss=cosine.")
    eval_file: str = option(
        None, "Rows to evaluate on (--do_eval, --eval_every_steps): anchor and positive "
        "columns for --eval_type=retrieval, text_a, text_b and score for --eval_type=sts.")
    corpus_file: str = option(
        None, "--eval_type=retrieval: more texts to search (a text column) besides the "
        "positives of --eval_file.")
    predict_file: str = option(
        None, "Texts to embed (--do_predict; a text column): output_dir/predictions.jsonl.")
    loss: str = option("mnrl", "mnrl: in-batch negatives (MultipleNegativesRankingLoss); "
                       "cosine: cosine similarity regression on scored pairs.", choices=LOSSES)
    scale: float = option(20.0, "--loss=mnrl: cosine similarities are multiplied by this "
                          "before the softmax (1 / temperature).")
    symmetric: bool = option(False, "--loss=mnrl: average with the positive -> anchor "
                             "direction (MultipleNegativesSymmetricRankingLoss).")
    max_score: float = option(5.0, "--loss=cosine: gold scores, in [0, max_score], are divided "
                              "by this (STS-B: 5).")
    eval_type: str = option(None, "retrieval or sts (default: retrieval with --loss=mnrl, sts "
                            "with --loss=cosine).", choices=EVAL_TYPES)
    pooling: str = option(None, "How token vectors become the embedding (default: the "
                          "sentence-transformers --init_checkpoint folder's, else mean).",
                          choices=POOLING_MODES)
    normalize: bool = option(None, "L2-normalise the embedding (default: as the "
                             "sentence-transformers --init_checkpoint folder says, else no).")
    train_batch_size: int = option(32, "Total batch size for training: with --loss=mnrl, "
                                   "the candidates each anchor is scored against.")
    eval_batch_size: int = option(64, "Total batch size for embedding texts (eval, predict).")
    learning_rate: float = option_like(TrainingOptions, "learning_rate", default=2e-5)
    num_train_epochs: float = option(1.0, "Total number of training epochs to perform.")
    max_train_examples: int = option(0, "Use only the first N training rows (0: all).")
    max_eval_examples: int = option(0, "Use only the first N eval rows (0: all).")

    serving_kind = "embedding"

    @property
    def evaluation_type(self):
        return self.eval_type or ("retrieval" if self.loss == "mnrl" else "sts")

    def validate_inputs(self):
        super().validate_inputs()
        if self.corpus_file and self.evaluation_type != "retrieval":
            raise ValueError("--corpus_file is searched by --eval_type=retrieval only")
        if self.corpus_file and not fileio.exists(self.corpus_file):
            raise FileNotFoundError(f"--corpus_file {self.corpus_file} does not exist")
        if self.scale <= 0 or self.max_score <= 0:
            raise ValueError("--scale and --max_score must be > 0")
        if self.max_train_examples < 0 or self.max_eval_examples < 0:
            raise ValueError("--max_train_examples and --max_eval_examples must be >= 0")

    def validate_model(self):
        """ModelOptions' checks; --pooling and --normalize resolved (the values run_options.json
        records)."""
        super().validate_model()
        from bert_tf.checkpoints.sentence_transformers import resolve_pooling
        folder = self.init_checkpoint if self.init_checkpoint and os.path.isdir(
            self.init_checkpoint) else None
        pooling = resolve_pooling(folder, self.pooling, self.normalize)
        self.pooling, self.normalize = pooling.mode, pooling.normalize

    def validate_training(self):
        super().validate_training()
        if self.do_train and self.loss == "mnrl":
            from bert_tf.objectives.embedding import InBatchNegativesObjective
            InBatchNegativesObjective.check_accumulation(self.gradient_accumulation_steps)


def _first(table, limit):
    return {column: values[:limit or None] for column, values in table.items()}


def read_training_rows(path, loss, max_score, limit=0):
    """{column: values} of the training file for `loss` (scores divided by max_score)."""
    from bert_tf.data.embedding import PAIRS, SCORED, read_rows
    if loss == "mnrl":
        return _first(read_rows(path, PAIRS), limit)
    table = _first(read_rows(path, SCORED, score_range=(0.0, max_score)), limit)
    table["score"] = [score / max_score for score in table["score"]]
    return table


def read_retrieval_set(path, corpus_file=None, limit=0):
    """A RetrievalSet of the (anchor, positive) rows of `path`: the distinct anchors are the
    queries, the distinct positives (then the texts of `corpus_file`) the corpus."""
    from bert_tf.data.embedding import CORPUS, PAIRS, read_rows
    from bert_tf.metrics.embedding import RetrievalSet
    table = _first(read_rows(path, PAIRS), limit)
    corpus = {}
    extra = read_rows(corpus_file, CORPUS)["text"] if corpus_file else []
    for text in table["positive"] + extra:
        corpus.setdefault(text, len(corpus))
    relevant = {}
    for anchor, positive in zip(table["anchor"], table["positive"]):
        relevant.setdefault(anchor, set()).add(corpus[positive])
    return RetrievalSet(list(relevant), list(corpus), [sorted(r) for r in relevant.values()])


def read_scored_pairs(path, limit=0):
    from bert_tf.data.embedding import SCORED, read_rows
    from bert_tf.metrics.embedding import ScoredPairs
    table = _first(read_rows(path, SCORED), limit)
    return ScoredPairs(table["text_a"], table["text_b"], table["score"])


def build_model(opts):
    """The BertEmbedder of opts (validated: pooling resolved). The encoder's pooler is no part
    of the embedding: it is not trained (it stays in checkpoints as loaded)."""
    from bert_tf.model import BertEmbedder, BertEncoder
    model = BertEmbedder(BertEncoder(opts.config), pooling=opts.pooling,
                         normalize=opts.normalize)
    model.encoder.pooler.trainable = False
    return model


class EmbeddingTask(FinetuneTask):
    """Sentence embeddings trained with --loss, evaluated by --eval_type (module docstring).
    prepare() builds the in-graph preprocessor (self.preprocessor)."""

    kind = "embedding"

    def __init__(self, opts):
        super().__init__(opts)
        self.default_metric = DEFAULT_METRICS[opts.evaluation_type]

    def contract(self, decision=None):
        return self.opts.contract(pooling=self.opts.pooling, normalize=self.opts.normalize)

    def prepare(self):
        from bert_tf.data.embedding.pipeline import make_preprocessor
        from bert_tf.jobs.checks import check_vocab_size
        opts = self.opts
        self.preprocessor = make_preprocessor(opts.vocab_file, opts.do_lower_case,
                                              opts.max_seq_length)
        check_vocab_size(self.preprocessor.tokenizer.vocabulary_size(), opts)
        return {}

    def training_data(self):
        from bert_tf.data.embedding.pipeline import training_dataset
        opts = self.opts
        table = read_training_rows(opts.train_file, opts.loss, opts.max_score,
                                   opts.max_train_examples)
        columns = tuple(column for column in table if column != "score")
        rows = len(table[columns[0]])

        def dataset_fn(input_context):
            batch = input_context.get_per_replica_batch_size(opts.train_batch_size)
            return training_dataset(table, columns, self.preprocessor, batch, opts.seed,
                                    input_context)
        logger.info("train %s: %d rows of %s", opts.train_file, rows, ", ".join(columns))
        return TrainingData(dataset_fn, rows, unit="rows",
                            description=f"{rows} rows ({', '.join(columns)})")

    def loss(self, training):
        from bert_tf.objectives.embedding import (CosineSimilarityObjective,
                                                  InBatchNegativesObjective)
        if self.opts.loss == "cosine":
            return CosineSimilarityObjective()
        return InBatchNegativesObjective(self.opts.scale, self.opts.symmetric)

    def build_model(self):
        return build_model(self.opts)

    def load_eval_data(self):
        opts = self.opts
        if opts.evaluation_type == "retrieval":
            data = read_retrieval_set(opts.eval_file, opts.corpus_file, opts.max_eval_examples)
            logger.info("eval %s: %d queries, a corpus of %d texts", opts.eval_file,
                        len(data.queries), len(data.corpus))
        else:
            data = read_scored_pairs(opts.eval_file, opts.max_eval_examples)
            logger.info("eval %s: %d scored pairs", opts.eval_file, len(data.scores))
        return data

    def embed(self, trainer, texts, what):
        """[len(texts), hidden] float64 embeddings of the model now in `trainer`."""
        from bert_tf.data.embedding.pipeline import texts_dataset
        batch_size = self.opts.eval_batch_size

        def dataset_fn(input_context):
            return texts_dataset(texts, self.preprocessor,
                                 input_context.get_per_replica_batch_size(batch_size),
                                 input_context)
        return predict_logits(trainer, dataset_fn, len(texts), what, key="embedding")

    def evaluate(self, trainer, step, eval_set):
        from bert_tf.metrics.embedding import evaluate_retrieval, evaluate_sts
        evaluate = (evaluate_retrieval if self.opts.evaluation_type == "retrieval"
                    else evaluate_sts)
        return Evaluation(step, evaluate(
            lambda texts: self.embed(trainer, texts, f"eval@{step}"), eval_set))

    def predict(self, trainer, evaluation, eval_set, decision):
        from bert_tf.data.embedding import CORPUS, read_rows
        texts = read_rows(self.opts.predict_file, CORPUS)["text"]
        embeddings = self.embed(trainer, texts, "predict")
        path = os.path.join(self.opts.output_dir, "predictions.jsonl")
        fileio.atomic_write_text(path, "".join(
            json.dumps({"text": text, "embedding": [round(float(x), 7) for x in vector]},
                       ensure_ascii=False) + "\n" for text, vector in zip(texts, embeddings)))
        logger.info("embeddings of %d texts: %s", len(texts), path)
        return path


def run(opts, strategy):
    """Trains, evaluates, embeds and/or exports (bert_tf.jobs.driver.run_task). Returns
    {"train", "eval", "predict", "export"} (values, metrics, predictions path, SavedModel
    version path)."""
    return run_task(EmbeddingTask(opts), strategy)
