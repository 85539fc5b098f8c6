"""InferenceContract: what a trained model needs at inference, declared once.

A model is only answered right when it is fed as it was trained: its kind, labels, casing,
sequence length, one text or a pair, long texts in windows (and how they combine), SQuAD's
query and answer lengths, the multi-label threshold, an embedding's pooling. Every fine-tuning
runner writes the contract beside its checkpoints (inference.json, in output_dir and best/);
export writes the same content into the export (assets.extra/export_info.json, with the export's
own facts beside it); export, bert_tf.predict, the serving heads and the portable exports read
it. A flag overrides what it may (a length, a threshold) and is refused by name where it
contradicts the training (labels, casing, the kind, text pairs).

The JSON keys are those export_info.json has always had (`task` is the kind, `seq_length` the
sequence length, `text_inputs` the raw-text inputs, `threshold` the multi-label threshold), so
one reader serves both files. Checkpoints written before inference.json existed keep working:
their run_options.json, label_list.txt and eval_results.txt are read instead (read_legacy).
"""

import dataclasses
import json
import logging
import os

from bert_tf import fileio, kinds, names

FILE = "inference.json"
logger = logging.getLogger("bert_tf")

# The defaults, each declared here only.
MAX_SEQ_LENGTH = 128
MAX_QUERY_LENGTH = 64          # run_squad: question WordPieces kept
MAX_ANSWER_LENGTH = 30         # run_squad: longest answer in WordPieces
DOC_STRIDE = 128               # run_squad: how far apart a long context's windows start
WORD_WINDOW_STRIDE = 64        # run_ner: how far apart a long text's word windows start
MULTI_LABEL_THRESHOLD = 0.5
TOP_K = 5                      # fill-mask predictions per [MASK]
NUM_CHOICES = 4                # multiple choice: endings per row (SWAG)
WINDOW_POOLINGS = ("mean", "max")

# attribute -> JSON key, where they differ
_KEYS = {"kind": "task", "max_seq_length": "seq_length", "multi_label_threshold": "threshold"}
# Settings that come from the training and that no flag may contradict.
TRAINED = ("kind", "labels", "do_lower_case", "text_pair", "pooling", "normalize")


@dataclasses.dataclass(frozen=True)
class InferenceContract:
    """What a model of `kind` (a bert_tf.kinds name) needs at inference; each kind reads the
    fields its Kind.settings names (bert_tf.kinds), beside kind, max_seq_length and
    do_lower_case.

      labels: label strings in class-id order (classifier, tagger, multi_label).
      text_pair: serving_default takes text_a and text_b (classifier, regression,
        multi_label, encoder).
      max_query_length, max_answer_length, doc_stride: SQuAD's question WordPieces, longest
        answer, and the distance between the starts of a long context's windows.
      window_stride, window_pooling, max_windows: a long first text read in windows of
        max_seq_length whose starts are window_stride WordPieces apart (0: truncate), at most
        max_windows of them (0: all), their logits (embeddings) combined by "mean" or "max"
        (classifier, regression, multi_label, embedding). A tagger's windows are of whole words
        and always on: window_stride is how far apart they start (0: WORD_WINDOW_STRIDE).
      multi_label_threshold: multi_label: a label is selected at a probability >= this.
      pooling, normalize: embedding: how token vectors become one vector, and L2 or not.
      num_choices: multiple_choice: endings per request row.
      top_k, include_special_tokens: fill_mask: predictions per [MASK], and whether special
        tokens may be among them.
    """

    kind: str = None
    max_seq_length: int = MAX_SEQ_LENGTH
    do_lower_case: bool = True
    labels: tuple = None
    text_pair: bool = False
    max_query_length: int = MAX_QUERY_LENGTH
    max_answer_length: int = MAX_ANSWER_LENGTH
    doc_stride: int = DOC_STRIDE
    window_stride: int = 0
    window_pooling: str = "mean"
    max_windows: int = 0
    multi_label_threshold: float = MULTI_LABEL_THRESHOLD
    pooling: str = "mean"
    normalize: bool = False
    num_choices: int = None
    top_k: int = TOP_K
    include_special_tokens: bool = False

    def __post_init__(self):
        if self.labels is not None:
            object.__setattr__(self, "labels", tuple(str(label) for label in self.labels))

    @property
    def spec(self):
        """The Kind of this contract (bert_tf.kinds)."""
        return kinds.get(self.kind)

    def text_inputs(self):
        """The names of serving_default's raw-text inputs."""
        spec = self.spec
        return list(spec.texts) + (["text_b"] if spec.pairs and self.text_pair else [])

    def windows(self):
        """The long-text window settings, as the serving heads take them."""
        return dict(window_stride=self.window_stride, window_pooling=self.window_pooling,
                    max_windows=self.max_windows)

    def settings(self):
        """The fields that matter for this kind (Kind.settings; the window settings only with
        a stride)."""
        names_ = list(self.spec.settings)
        if "window_stride" in names_ and not self.window_stride and self.spec.windows:
            names_ = [n for n in names_ if n not in ("window_stride", "window_pooling",
                                                     "max_windows")]
        return names_

    def to_info(self):
        """The JSON object of inference.json, and the contract part of an export's
        export_info.json."""
        info = {"task": self.kind, "seq_length": self.max_seq_length,
                "do_lower_case": bool(self.do_lower_case), "text_inputs": self.text_inputs()}
        for name in self.settings():
            if name == "text_pair":
                continue                         # in text_inputs
            value = getattr(self, name)
            info[_KEYS.get(name, name)] = list(value) if isinstance(value, tuple) else value
        return info

    @classmethod
    def from_info(cls, info, where):
        """The contract an inference.json or export_info.json object describes; ValueError
        naming `where` when it is not one."""
        try:
            kind = info["task"]
            kinds.get(kind)
            values = {"kind": kind, "max_seq_length": int(info["seq_length"]),
                      "do_lower_case": bool(info.get("do_lower_case", True)),
                      "text_pair": "text_b" in info.get("text_inputs", ())}
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"{where}: not an inference contract bert_tf wrote ({e})") from None
        for field in dataclasses.fields(cls):
            key = _KEYS.get(field.name, field.name)
            if field.name not in values and key in info:
                values[field.name] = info[key]
        return cls(**values)

    def text(self):
        """The text of inference.json."""
        return json.dumps(self.to_info(), indent=2) + "\n"

    def write(self, folder):
        """Writes folder/inference.json atomically."""
        fileio.atomic_write_text(os.path.join(os.fspath(folder), FILE), self.text())

    def replace(self, **changes):
        return dataclasses.replace(self, **changes)


def beside(path, name):
    """`name` in the folder of checkpoint `path` (a folder or a prefix), if it exists."""
    path = os.fspath(path)
    folder = path if fileio.isdir(path) else os.path.dirname(os.path.abspath(path))
    candidate = os.path.join(folder, name)
    return candidate if fileio.exists(candidate) else None


@dataclasses.dataclass(frozen=True)
class Recorded:
    """A contract as found beside a checkpoint: the contract, the fields it really records
    (`known`; the rest are defaults), the file, and the kinds the model may be read as (one
    with inference.json; a legacy run's runner may have trained several)."""

    contract: InferenceContract
    known: frozenset
    path: str
    kinds: tuple             # empty: the record does not say (a label list alone)
    legacy: bool = False

    def of_kind(self, kind):
        """The contract for reading the model as `kind`, one of self.kinds."""
        return self.contract.replace(kind=kind)


def read(path):
    """The Recorded contract beside checkpoint `path`: its inference.json, else what a run
    written before it left (read_legacy), else None."""
    found = beside(path, FILE)
    if found is None:
        return read_legacy(path)
    with fileio.open_binary(found) as f:
        try:
            info = json.loads(f.read().decode("utf-8"))
        except ValueError as e:
            raise ValueError(f"{found}: not JSON ({e})") from None
    contract = InferenceContract.from_info(info, found)
    return Recorded(contract, frozenset(["kind", "max_seq_length", "do_lower_case",
                                         *contract.settings()]), found, (contract.kind,))


def read_legacy(path):
    """A Recorded contract from the files a fine-tuning run wrote before inference.json: the
    input settings of run_options.json, the labels of label_list.txt and the multi-label
    threshold of eval_results.txt; None without the first two. The kind is the runner's (a
    run_classifier run recorded "classifier" whatever it trained): the model may be read as
    any kind its runner trains, a multi_label one first where eval_results.txt holds a tuned
    threshold; with a label list alone, as any kind."""
    from bert_tf.checkpoints.run_options import RunRecord, read_run_options
    from bert_tf.metrics.results import saved_threshold
    record, labels_file = read_run_options(path), beside(path, names.LABELS_FILE)
    if record is None and labels_file is None:
        return None
    record = record or RunRecord(None, {}, labels_file)
    options, values = record.options, {}
    for name in ("max_seq_length", "do_lower_case", "max_query_length", "max_answer_length",
                 "pooling", "normalize", "num_choices"):
        if options.get(name) is not None:
            values[name] = options[name]
    stride = options.get("doc_stride")
    spec = kinds.get(record.kind) if record.kind else None
    if not stride or spec is None:
        pass
    elif "doc_stride" in spec.settings:
        values["doc_stride"] = stride
    elif stride and "window_stride" in spec.settings:
        values["window_stride"] = stride
        if spec.windows:
            values.update({name: options[name] for name in ("window_pooling", "max_windows")
                           if options.get(name) is not None})
    if labels_file:
        from bert_tf.data.classification.writers import read_label_list
        values["labels"] = read_label_list(labels_file)
    threshold = saved_threshold(os.fspath(path))
    if threshold is not None:
        values["multi_label_threshold"] = threshold
    trained = tuple(k for k in kinds.KINDS if record.kind is not None and (
        k == record.kind or kinds.trained_together(record.kind, k)))
    if threshold is not None and "multi_label" in trained:
        trained = ("multi_label",) + tuple(k for k in trained if k != "multi_label")
    contract = InferenceContract(kind=trained[0] if trained else None, **values)
    return Recorded(contract, frozenset(values), record.path, trained, legacy=True)


def resolve(recorded, kind, given, flag_names=None):
    """The contract for reading a model as `kind`: `given` ({field: value} of the flags the
    caller gave) over the Recorded contract (None: nothing recorded) over the defaults.

    Raises ValueError naming the flag (flag_names maps fields to flag names, default
    --<field>) when a given value contradicts what the model was trained with (TRAINED
    fields the record knows), or when the record's model is not a `kind` model."""
    flag_names = flag_names or {}
    if recorded is not None and recorded.kinds and kind not in recorded.kinds:
        if not (recorded.legacy or kinds.get(kind).serves):
            raise ValueError(f"{flag_names.get('kind', '--task')}={kind}, but {recorded.path} "
                             f"records a {recorded.contract.kind} model")
        # A run of another kind (its encoder exported, or a file of old beside another
        # model): its settings are not this model's.
        logger.warning("%s was written by a %s run; the model is a %s model: its settings "
                       "are not used", recorded.path, recorded.contract.kind, kind)
        recorded = None
    if recorded is None:
        return InferenceContract(kind=kind, **given)
    base = recorded.of_kind(kind)
    for name, value in given.items():
        if (name in TRAINED and name in recorded.known
                and _comparable(value) != _comparable(getattr(base, name))):
            flag = flag_names.get(name, f"--{name}")
            raise ValueError(f"{flag}={_shown(value)} contradicts what the model was trained "
                             f"with ({recorded.path}: {_shown(getattr(base, name))})")
    return base.replace(**given)


def _comparable(value):
    return tuple(str(v) for v in value) if isinstance(value, (list, tuple)) else value


def _shown(value):
    return ",".join(value) if isinstance(value, (list, tuple)) else value
