"""create_pretraining_data end to end on real corpus text: schema, values, statistics,
determinism, round-robin outputs, sharding, resuming."""

import json
import math
import os
import sys

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data.pretraining import PretrainingDataOptions, create_pretraining_data
from bert_tf.data.pretraining import inputs, job, shard_worker
from tests.helpers import REPO, corpus_slice, shared_path
from bert_tf import processes

Z = 4.5
VOCAB_SIZE = 30522
CLS, SEP, MASK = 101, 102, 103


def _vocab():
    return str(shared_path("data/reference/vocab.txt"))


def _options(**kw):
    defaults = dict(vocab_file=_vocab(), dupe_factor=2, shard_size_mb=0.05)
    defaults.update(kw)
    return PretrainingDataOptions(**defaults)


def _original_spec(max_seq_length=128, max_predictions_per_seq=20):
    """google-research/bert run_pretraining.py's name_to_features."""
    return {
        "input_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "input_mask": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "segment_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "masked_lm_positions": tf.io.FixedLenFeature([max_predictions_per_seq], tf.int64),
        "masked_lm_ids": tf.io.FixedLenFeature([max_predictions_per_seq], tf.int64),
        "masked_lm_weights": tf.io.FixedLenFeature([max_predictions_per_seq], tf.float32),
        "next_sentence_labels": tf.io.FixedLenFeature([1], tf.int64),
    }


def _records(path):
    return [r.numpy() for r in tf.data.TFRecordDataset(path)]


def _parse_all(paths, spec):
    ds = tf.data.TFRecordDataset(paths).batch(100000)
    return {k: v.numpy() for k, v in tf.io.parse_example(next(iter(ds)), spec).items()}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("corpus")
    return [corpus_slice(name, tmp / name, max_bytes) for name, max_bytes in (
        ("wikitext2_raw_valid_test.sentences.txt", 90_000),
        ("gutenberg_prose.sentences.txt", 60_000))]


@pytest.fixture(scope="module")
def generated(corpus, tmp_path_factory):
    """One run whose encoder inputs are captured, to compare with what the files hold."""
    out = str(tmp_path_factory.mktemp("out") / "out.tfrecord")
    captured = []
    original = shard_worker.example_codec.encode_examples

    def spy(features):
        captured.append({name: np.array(values) for name, _, values in features})
        return original(features)

    shard_worker.example_codec.encode_examples = spy
    try:
        summary = create_pretraining_data(",".join(corpus), out, _options(dupe_factor=5),
                                          num_workers=1)
    finally:
        shard_worker.example_codec.encode_examples = original
    intended = {k: np.concatenate([c[k] for c in captured]) for k in captured[0]}
    return out, summary, intended


def test_every_record_parses_with_the_original_spec_and_holds_the_intended_values(generated):
    out, summary, intended = generated
    parsed = _parse_all([out], _original_spec())
    assert len(parsed["input_ids"]) == summary["instances"] > 1000
    for name, values in intended.items():
        np.testing.assert_array_equal(parsed[name], values, err_msg=name)


def test_records_are_consistent_instances(generated):
    out, _, _ = generated
    f = _parse_all([out], _original_spec())
    ids, mask, seg = f["input_ids"], f["input_mask"], f["segment_ids"]
    length = mask.sum(axis=1)
    pos = np.arange(128)[None, :]
    np.testing.assert_array_equal(mask, (pos < length[:, None]).astype(np.int64))
    assert np.all(ids[mask == 0] == 0) and np.all(seg[mask == 0] == 0)
    assert np.all(ids[:, 0] == CLS) and np.all(seg[:, 0] == 0)
    len_a = (seg == 0).sum(axis=1) - (128 - length) - 2  # [CLS] and the first [SEP]
    rows = np.arange(len(ids))
    assert np.all(ids[rows, len_a + 1] == SEP) and np.all(ids[rows, length - 1] == SEP)
    np.testing.assert_array_equal(seg, ((pos >= len_a[:, None] + 2) & (mask == 1)).astype(int))
    assert np.all(len_a >= 1) and np.all(length - len_a - 3 >= 1)
    assert ids.max() < VOCAB_SIZE and f["masked_lm_ids"].max() < VOCAB_SIZE
    w = f["masked_lm_weights"]
    count = w.sum(axis=1).astype(int)
    np.testing.assert_array_equal(w, (np.arange(20)[None, :] < count[:, None]).astype(np.float32))
    p = f["masked_lm_positions"]
    assert np.all(p[w == 0] == 0) and np.all(f["masked_lm_ids"][w == 0] == 0)
    real = w > 0
    assert np.all(np.diff(np.where(real, p, 10**6), axis=1)[real[:, 1:]] > 0)  # sorted
    assert np.all(p[real] < np.repeat(length, 20).reshape(-1, 20)[real])
    assert not np.any(p[real] == 0)
    assert not np.any(p[real] == np.repeat(len_a + 1, 20).reshape(-1, 20)[real])
    assert set(np.unique(f["next_sentence_labels"])) <= {0, 1}


def test_masked_fraction_replacements_and_nsp_balance_are_as_specified(generated):
    out, summary, _ = generated
    f = _parse_all([out], _original_spec())
    real = f["masked_lm_weights"] > 0
    n = int(real.sum())
    length = f["input_mask"].sum(axis=1)
    expected = np.minimum(20, np.maximum(1, np.rint(length * 0.15)))
    np.testing.assert_array_equal(real.sum(axis=1), expected)
    at = np.take_along_axis(f["input_ids"], f["masked_lm_positions"], 1)[real]
    as_mask = (at == MASK).mean()
    kept = (at == f["masked_lm_ids"][real]).mean()
    for observed, prob in ((as_mask, 0.8), (kept, 0.1), (1 - as_mask - kept, 0.1)):
        assert abs(observed - prob) < Z * math.sqrt(prob * (1 - prob) / n), (observed, prob)
    nsp = summary["next_sentence"]
    forced = nsp["random_next_forced_by_single_sentence_chunks"]
    tossed = summary["instances"] - forced
    fraction = (nsp["random_next"] - forced) / tossed
    assert abs(fraction - 0.5) < Z * math.sqrt(0.25 / tossed), fraction
    assert int(f["next_sentence_labels"].sum()) == nsp["random_next"]
    assert summary["masked_lm_predictions"] == n


def test_summary_is_written_as_json_beside_the_output(generated):
    out, summary, _ = generated
    with open(out + ".summary.json") as fh:
        on_disk = json.load(fh)
    assert on_disk["instances"] == summary["instances"]
    assert sum(on_disk["length_histogram"].values()) == summary["instances"]
    assert on_disk["output_bytes"] == [os.path.getsize(out)]
    assert not os.path.exists(os.path.join(os.path.dirname(out), ".out.tfrecord.work"))


def test_output_is_the_same_for_any_number_of_workers_and_changes_with_the_seed(corpus,
                                                                                 tmp_path):
    one, two, other = (str(tmp_path / n) for n in ("one.tfrecord", "two.tfrecord", "s.tfrecord"))
    create_pretraining_data(corpus, one, _options(dupe_factor=1), num_workers=1)
    create_pretraining_data(corpus, other, _options(dupe_factor=1, random_seed=1), num_workers=1)
    # Two worker processes, through the command line (this process has TensorFlow loaded).
    result = processes.run(
        [sys.executable, str(REPO / "create_pretraining_data.py"),
         f"--input_file={','.join(corpus)}", f"--output_file={two}", f"--vocab_file={_vocab()}",
         "--dupe_factor=1", "--shard_size_mb=0.05", "--num_workers=2"],
        capture_output=True, text=True, timeout=600,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert result.returncode == 0, result.stderr[-3000:]
    assert "2 workers" in result.stderr
    with open(one, "rb") as a, open(two, "rb") as b, open(other, "rb") as c:
        first = a.read()
        assert first == b.read()
        assert first != c.read()


def test_several_outputs_receive_the_records_round_robin(corpus, tmp_path):
    single = str(tmp_path / "all.tfrecord")
    parts = [str(tmp_path / f"part-{i}.tfrecord") for i in range(3)]
    create_pretraining_data(corpus, single, _options(dupe_factor=1), num_workers=1)
    summary = create_pretraining_data(corpus, ",".join(parts), _options(dupe_factor=1),
                                      num_workers=1)
    every = _records(single)
    dealt = [_records(p) for p in parts]
    assert max(map(len, dealt)) - min(map(len, dealt)) <= 1
    assert summary["output_records"] == [len(d) for d in dealt]
    assert [dealt[i % 3][i // 3] for i in range(len(every))] == every


def test_shards_are_whole_documents_covering_every_byte(corpus):
    shards = inputs.plan_shards(corpus, 10_000)
    assert len(shards) > 5
    largest_document = max(len(doc) + 2 for path in corpus
                           for doc in open(path, encoding="utf-8").read().split("\n\n"))
    covered = {}
    for shard in shards:
        assert shard.num_bytes <= 10_000 + largest_document
        for seg in shard.segments:
            with open(seg.path, "rb") as f:
                data = f.read()
            assert seg.start == 0 or data[seg.start - 2:seg.start] == b"\n\n"
            assert seg.end == len(data) or data[seg.end - 2:seg.end] == b"\n\n"
            covered.setdefault(seg.path, []).append((seg.start, seg.end))
    for path, spans in covered.items():
        spans.sort()
        assert spans[0][0] == 0 and spans[-1][1] == os.path.getsize(path)
        assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))


def test_the_end_of_a_file_ends_its_document(tmp_path):
    # google-research/bert merged a file's last document with the next file's first one, so
    # "actual next" pairs could join text of two files.
    first = tmp_path / "a.txt"
    second = tmp_path / "b.txt"
    first.write_text("\n".join(f"the apple number {i} is red ." for i in range(40))
                     + "\nthe last apple says finale", encoding="utf-8")  # no final newline
    second.write_text("\n".join(f"a banana number {i} is yellow ." for i in range(40)) + "\n",
                      encoding="utf-8")
    out = str(tmp_path / "o.tfrecord")
    create_pretraining_data([str(first), str(second)], out,
                            _options(dupe_factor=20, max_seq_length=32), num_workers=1)
    f = _parse_all([out], _original_spec(32))
    apple, banana, finale = 6207, 15212, 9599
    originals = f["input_ids"].copy()
    rows = np.broadcast_to(np.arange(len(originals))[:, None], f["masked_lm_positions"].shape)
    real = f["masked_lm_weights"] > 0
    originals[rows[real], f["masked_lm_positions"][real]] = f["masked_lm_ids"][real]
    is_next = f["next_sentence_labels"][:, 0] == 0
    has_apple = (originals == apple).any(axis=1)
    has_banana = (originals == banana).any(axis=1)
    assert is_next.sum() > 20
    assert not np.any(is_next & has_apple & has_banana)
    assert (originals == finale).any()


def test_an_interrupted_run_resumes_to_the_same_output_and_a_finished_one_is_skipped(
        corpus, tmp_path, monkeypatch, caplog):
    reference = str(tmp_path / "ref.tfrecord")
    create_pretraining_data(corpus, reference, _options(dupe_factor=1), num_workers=1)
    out = str(tmp_path / "out.tfrecord")
    calls = []
    original = job._Progress.report

    def crash_after_two_shards(self, *args):
        original(self, *args)
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(job._Progress, "report", crash_after_two_shards)
    with pytest.raises(KeyboardInterrupt):
        create_pretraining_data(corpus, out, _options(dupe_factor=1), num_workers=1)
    assert not os.path.exists(out)  # only the hidden partial file exists
    monkeypatch.setattr(job._Progress, "report", original)
    caplog.set_level("INFO")
    create_pretraining_data(corpus, out, _options(dupe_factor=1), num_workers=1)
    assert "resuming after shard 2" in caplog.text
    with open(out, "rb") as a, open(reference, "rb") as b:
        assert a.read() == b.read()
    before = os.stat(out).st_mtime_ns
    caplog.clear()
    again = create_pretraining_data(corpus, out, _options(dupe_factor=1), num_workers=1)
    assert "already complete" in caplog.text
    assert os.stat(out).st_mtime_ns == before
    assert again["instances"] == len(_records(out))
    create_pretraining_data(corpus, out, _options(dupe_factor=1, random_seed=9), num_workers=1)
    with open(out, "rb") as a, open(reference, "rb") as b:
        assert a.read() != b.read()  # other arguments: generated anew


def test_dynamic_masking_files_hold_unmasked_sequences(corpus, tmp_path):
    out = str(tmp_path / "dyn.tfrecord")
    summary = create_pretraining_data(corpus[:1], out, _options(dupe_factor=1,
                                                                dynamic_masking=True),
                                      num_workers=1)
    example = tf.train.Example.FromString(_records(out)[0])
    assert sorted(example.features.feature) == ["input_ids", "input_mask",
                                                "next_sentence_labels", "segment_ids"]
    spec = {k: v for k, v in _original_spec().items() if not k.startswith("masked_lm")}
    f = _parse_all([out], spec)
    assert not np.any(f["input_ids"] == MASK)
    assert summary["masked_lm_predictions"] == 0
