"""Long texts read in windows (run_classifier --doc_stride): the windows cover every
WordPiece of real long documents, the model combines window logits per example, the tf.data
pipeline keeps examples and windows apart, and the exported signature combines as training
does."""

import csv
import json
import sys

import numpy as np
import pytest
import tensorflow as tf

from helpers import REPO, minilm_dir, shared_path

sys.path.insert(0, str(REPO / "quality"))
import long_text_task  # noqa: E402


def reference_spans(length, window, stride, max_windows=0):
    """The windows in plain Python: starts stride apart, the last moved back to end at the
    text's end."""
    stride = max(1, min(stride, window))
    starts, start = [], 0
    while True:
        starts.append(min(start, max(length - window, 0)))
        if start + window >= length:
            break
        start += stride
    if max_windows:
        starts = starts[:max_windows]
    return [(s, min(s + window, length)) for s in starts]


@pytest.mark.parametrize("window,stride", [(6, 4), (6, 6), (6, 9), (10, 1)])
def test_window_spans_cover_every_token(window, stride):
    from bert_tf.tokenization.windows import window_spans
    lengths = [0, 1, 5, 6, 7, 11, 30, 64]
    example, start, end = (t.numpy() for t in window_spans(tf.constant(lengths, tf.int64),
                                                           window, stride))
    for row, length in enumerate(lengths):
        spans = list(zip(start[example == row], end[example == row]))
        assert spans == reference_spans(length, window, stride)
        covered = set()
        for s, e in spans:
            covered.update(range(s, e))
        assert covered == set(range(length))


def test_max_windows_keeps_the_first_ones():
    from bert_tf.tokenization.windows import window_spans
    example, start, _ = window_spans(tf.constant([40, 3], tf.int64), 8, 4, max_windows=3)
    assert example.numpy().tolist() == [0, 0, 0, 1]
    assert start.numpy().tolist() == [0, 4, 8, 0]


@pytest.fixture(scope="module")
def long_docs(tmp_path_factory):
    """Real long documents: SQuAD paragraphs with an SST-2 review inside, and their labels."""
    folder = tmp_path_factory.mktemp("long_text")
    long_text_task.build(str(folder), shared=str(shared_path("")), num_train=48, num_dev=16)
    with open(folder / "dev.tsv", encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
    return folder, [r[0] for r in rows], [r[1] for r in rows]


def test_windows_are_full_tokenizer_slices(long_docs):
    from bert_tf.tokenization import BertPreprocessor, FullTokenizer
    _, texts, _ = long_docs
    vocab = str(minilm_dir() / "vocab.txt")
    tokenizer = FullTokenizer(vocab, do_lower_case=True)
    seq, stride = 64, 40
    out = BertPreprocessor(vocab, lower_case=True, seq_length=seq, doc_stride=stride)(
        tf.constant(texts[:6]))
    ids, mask = out["input_ids"].numpy(), out["input_mask"].numpy()
    rows = out["window_example"].numpy()
    for row, text in enumerate(texts[:6]):
        expected = tokenizer.convert_tokens_to_ids(tokenizer.tokenize(text))
        assert len(expected) > seq                          # a long document: several windows
        windows = [ids[i][1:mask[i].sum() - 1].tolist() for i in np.flatnonzero(rows == row)]
        spans = reference_spans(len(expected), seq - 2, stride)
        assert windows == [expected[s:e] for s, e in spans]
        assert all(ids[i][0] == tokenizer.vocab["[CLS]"] for i in np.flatnonzero(rows == row))


def test_a_second_text_is_in_every_window_up_to_half():
    from bert_tf.tokenization.windows import pack_windows
    first = tf.ragged.constant([list(range(10, 40)), [50, 51]])
    second = tf.ragged.constant([[1, 2, 3], list(range(60, 80))])
    features, rows = pack_windows([first, second], 16, 4, 101, 102)
    ids, segments = features["input_ids"].numpy(), features["segment_ids"].numpy()
    for i, row in enumerate(rows.numpy()):
        second_part = ids[i][segments[i] == 1].tolist()
        if row == 0:
            assert second_part == [1, 2, 3, 102]               # whole
        else:
            assert second_part == list(range(60, 66)) + [102]  # cut to half the 13 free slots
    assert (rows.numpy() == 0).sum() == 6    # 30 tokens, windows of 10 starting 0, 4, ..., 20


@pytest.mark.parametrize("pooling", ["mean", "max"])
def test_classifier_combines_window_logits(pooling):
    from bert_tf.config import BertConfig
    from bert_tf.model import BertClassifier, BertEncoder
    config = BertConfig(vocab_size=60, hidden_size=16, num_hidden_layers=1,
                        num_attention_heads=2, intermediate_size=32)
    model = BertClassifier(BertEncoder(config), 3, window_pooling=pooling)
    ids = np.random.default_rng(0).integers(5, 60, (5, 12)).astype(np.int32)
    features = {"input_ids": ids, "input_mask": np.ones_like(ids),
                "segment_ids": np.zeros_like(ids)}
    windows = np.array([0, 0, 1, 2, 2], np.int32)
    per_window = model(features)["logits"].numpy()
    combined = model(dict(features, window_example=windows))["logits"].numpy()
    reduce = np.mean if pooling == "mean" else np.max
    expected = np.stack([reduce(per_window[windows == k], axis=0) for k in range(3)])
    np.testing.assert_allclose(combined, expected, rtol=1e-5, atol=1e-6)
    clone = BertClassifier.from_config(model.get_config())
    assert clone.window_pooling == pooling


def test_pipeline_batches_examples_and_windows(long_docs):
    from bert_tf.data.classification import pipeline
    from bert_tf.data.classification.processor import InputExample
    _, texts, labels = long_docs
    examples = [InputExample(f"dev-{i}", t, None, l) for i, (t, l) in
                enumerate(zip(texts, labels))]
    columns = pipeline.ExampleColumns(examples, ["0", "1"])
    preprocessor = pipeline.make_preprocessor(str(minilm_dir() / "vocab.txt"), True, 64,
                                              doc_stride=48)
    seen = []
    for batch in pipeline.classifier_dataset(columns, 4, is_training=False, max_seq_length=64,
                                             preprocessor=preprocessor):
        b = batch["label_ids"].shape[0]
        windows = batch["window_example"].numpy()
        assert batch["input_ids"].shape[0] == len(windows) > b
        assert sorted(set(windows)) == list(range(b))       # every example has windows
        seen.extend(batch["example_index"].numpy().tolist())
    assert seen == list(range(len(examples)))


def test_windowed_export_combines_like_the_model(long_docs, tmp_path):
    from bert_tf.config import BertConfig
    from bert_tf.model import BertClassifier, BertEncoder
    from helpers import export_savedmodel
    from bert_tf.tokenization import BertPreprocessor
    _, texts, _ = long_docs
    vocab = str(minilm_dir() / "vocab.txt")
    config = BertConfig(vocab_size=30522, hidden_size=16, num_hidden_layers=1,
                        num_attention_heads=2, intermediate_size=32)
    model = BertClassifier(BertEncoder(config), 2, window_pooling="max")
    path = export_savedmodel(model, "classifier", str(tmp_path / "export"), vocab, True, 64,
                             ["0", "1"], window_stride=48, window_pooling="max", warmup=False)
    served = tf.saved_model.load(path).signatures["serving_default"](
        text_a=tf.constant(texts[:4]))
    features = BertPreprocessor(vocab, seq_length=64, doc_stride=48)(tf.constant(texts[:4]))
    expected = model(features)["logits"].numpy()
    np.testing.assert_allclose(served["logits"].numpy(), expected, rtol=1e-4, atol=1e-5)
    info = json.loads((tmp_path / "export" / "1" / "assets.extra" / "export_info.json")
                      .read_text())
    assert (info["window_stride"], info["window_pooling"]) == (48, "max")


def test_classifier_options_refuse_window_flags_that_cannot_apply(tmp_path):
    """run_classifier: --window_pooling / --max_windows need --doc_stride; a stride past the
    window would skip text; XLA would recompile for every batch's window count."""
    from bert_tf.config import BertConfig
    from bert_tf.jobs.classifier import ClassifierOptions

    def validate(**kwargs):
        ClassifierOptions(config=BertConfig.from_preset("L-1_H-32_A-2", vocab_size=30522,
                                                        max_position_embeddings=128),
                          vocab_file=str(minilm_dir() / "vocab.txt"), task_name="generic",
                          data_dir=str(tmp_path), output_dir=str(tmp_path), do_train=True,
                          max_seq_length=64, **kwargs).validate()

    with pytest.raises(ValueError, match="^--window_pooling applies to --doc_stride windows"):
        validate(window_pooling="max")
    with pytest.raises(ValueError, match="^--window_pooling, --max_windows apply to "
                                         "--doc_stride windows"):
        validate(window_pooling="max", max_windows=2)
    with pytest.raises(ValueError, match=r"^--doc_stride=63 is larger than the window of "
                                         r"--max_seq_length=64 \(62 WordPieces"):
        validate(doc_stride=63)
    with pytest.raises(ValueError, match="^--doc_stride with --jit_compile"):
        validate(doc_stride=32, jit_compile=True)
    validate(doc_stride=62, window_pooling="max", max_windows=2)
    validate(jit_compile=True)
