"""Extending a released vocabulary (build_vocab.py --extend) and loading a checkpoint into a
model with the grown vocabulary: all-MiniLM-L6-v2's vocabulary and weights, WikiText-2 text."""

import collections
import json
import logging
import os
import sys

import numpy as np
import pytest

from bert_tf import BertConfig, BertEncoder, BertPretrainer, tokenization
from bert_tf.checkpoints import CheckpointError, load_weights, save_weights
from bert_tf.checkpoints.hf import read_hf
from bert_tf.tokenization import vocab_extension, vocab_learning
from bert_tf.tokenization.vocab import Vocabulary
from bert_tf import processes
from helpers import REPO, minilm_dir, shared_path

CORPUS = "data/corpus/bert_format/wikitext2_raw_valid_test.sentences.txt"
NUM_NEW = 1010            # MiniLM (as bert-base-uncased) has 994 [unused] slots: 16 appended
PLAIN_TEXT = "Fellow citizens of the Senate and of the House of Representatives."


def run_build_vocab(*args):
    return processes.run([sys.executable, str(REPO / "build_vocab.py"), *map(str, args)],
                         capture_output=True, text=True, cwd=REPO, timeout=300)


@pytest.fixture(scope="module")
def old_tokens():
    return Vocabulary.from_file(minilm_dir() / "vocab.txt").id_to_token


@pytest.fixture(scope="module")
def extended(old_tokens, tmp_path_factory):
    """MiniLM's vocabulary extended by NUM_NEW words of WikiText-2, written to vocab.txt."""
    counts = vocab_learning.count_words([str(shared_path(CORPUS))], True)
    ext = vocab_extension.extend_vocab(old_tokens, counts, NUM_NEW)
    path = tmp_path_factory.mktemp("extended") / "vocab.txt"
    vocab_learning.write_vocab(ext.tokens, str(path))
    return ext, path, counts


@pytest.fixture(scope="module")
def extended_config(extended):
    return BertConfig.from_json_file(minilm_dir() / "config.json").replace(
        vocab_size=len(extended[0].tokens))


# ------------------------------------------------------------------ the vocabulary
def test_every_old_token_keeps_its_id(old_tokens, extended):
    ext, _, _ = extended
    slots = set(vocab_extension.unused_slots(old_tokens))
    assert len(slots) == 994
    for i, token in enumerate(old_tokens):
        if i not in slots:
            assert ext.tokens[i] == token, i
    assert [ext.tokens[i] for i in (0, 100, 101, 102, 103)] == [
        "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def test_new_tokens_fill_the_unused_slots_in_order_then_are_appended(old_tokens, extended):
    ext, path, _ = extended
    words = [c.word for c in ext.added]
    assert len(words) == NUM_NEW and len(set(words)) == NUM_NEW
    assert ext.in_unused == list(zip(vocab_extension.unused_slots(old_tokens), words[:994]))
    assert ext.appended == [(len(old_tokens) + k, w) for k, w in enumerate(words[994:])]
    assert len(ext.tokens) == len(old_tokens) + NUM_NEW - 994 and ext.unused_left == 0
    assert ext.tokens[1] == words[0] and ext.tokens[104] == words[99]  # [unused0], [unused99]
    on_disk = path.read_text(encoding="utf-8").split("\n")
    assert on_disk[:-1] == ext.tokens and on_disk[-1] == ""


def test_words_are_ranked_by_tokens_saved(old_tokens, extended):
    ext, _, counts = extended
    savings = [c.count * (len(c.pieces) - 1) for c in ext.added]
    assert savings == sorted(savings, reverse=True)
    assert all(c.count == counts[c.word] >= 3 and len(c.pieces) >= 2 for c in ext.added)
    # every qualifying word left out saves at most as many tokens as the last one added
    ranked = vocab_extension.rank_candidates(counts, {t: i for i, t in enumerate(old_tokens)})
    assert len(ranked) == ext.num_candidates > NUM_NEW
    assert [c.word for c in ranked[:NUM_NEW]] == [c.word for c in ext.added]
    assert max(c.saving for c in ranked[NUM_NEW:]) <= savings[-1]


def test_ranking_rule_on_chosen_counts(old_tokens):
    vocab = {t: i for i, t in enumerate(old_tokens)}
    missing_char = next(chr(c) for c in range(0x2600, 0x2800)
                        if chr(c) not in vocab and "##" + chr(c) not in vocab)
    counts = collections.Counter({"tikal": 10,            # ti ##kal: saves 10
                                  "guadalcanal": 4,       # gu ##ada ##lc ##anal: saves 12
                                  "lesnar": 12,           # les ##nar: saves 12, more often
                                  "the": 1000,            # already a token
                                  "kawaguchi": 2,         # below min_count
                                  "tikal" + missing_char: 50})   # [UNK]: not a candidate
    ranked = vocab_extension.rank_candidates(counts, vocab, min_count=3)
    assert [(c.word, c.pieces) for c in ranked] == [
        ("lesnar", ["les", "##nar"]), ("guadalcanal", ["gu", "##ada", "##lc", "##anal"]),
        ("tikal", ["ti", "##kal"])]


def test_new_words_are_now_one_token_and_other_text_keeps_its_ids(extended):
    ext, path, _ = extended
    old = tokenization.FullTokenizer(str(minilm_dir() / "vocab.txt"))
    new = tokenization.FullTokenizer(str(path))
    words = [c.word for c in ext.added]
    assert [new.tokenize(w) for w in words] == [[w] for w in words]
    assert all(len(old.tokenize(w)) >= 2 for w in words)
    text = "The ironclads of Tikal fought at Guadalcanal."
    assert new.tokenize(text) == ["the", "ironclads", "of", "tikal", "fought", "at",
                                  "guadalcanal", "."]
    assert len(old.tokenize(text)) == 14
    assert new.encode(PLAIN_TEXT) == old.encode(PLAIN_TEXT)


def test_no_room_without_unused_slots_and_growth_is_an_error(extended):
    ext, _, counts = extended
    with pytest.raises(ValueError, match=r"no \[unusedN\] slots and --noallow_growth"):
        vocab_extension.extend_vocab(ext.tokens, counts, 5, allow_growth=False)
    grown = vocab_extension.extend_vocab(ext.tokens, counts, 5)        # growth: appended
    assert grown.in_unused == [] and len(grown.appended) == 5
    assert grown.tokens[:len(ext.tokens)] == ext.tokens


def test_noallow_growth_fills_only_the_unused_slots(old_tokens, extended):
    _, _, counts = extended
    ext = vocab_extension.extend_vocab(old_tokens, counts, NUM_NEW, allow_growth=False)
    assert len(ext.tokens) == len(old_tokens) and len(ext.in_unused) == 994
    assert ext.appended == [] and not ext.grew


# ------------------------------------------------------------------ loading the checkpoint
def test_grown_model_loads_minilm_old_rows_identical_new_rows_mean(
        extended, extended_config, minilm_encoder, caplog):
    ext, path, _ = extended
    encoder = BertEncoder(extended_config)
    with caplog.at_level(logging.INFO, logger="bert_tf.checkpoints.report"):
        report = load_weights(encoder, minilm_dir())
    assert ("word_embeddings: 30522 rows from the checkpoint, 16 new rows initialised to the "
            "mean of the checkpoint's rows") in caplog.text
    assert report.resized == [("bert/embeddings/word_embeddings", 30522, 30538,
                               "the mean of the checkpoint's rows")]
    assert report.missing == [] and report.mismatched == [] and len(report.loaded) == 103
    stored = read_hf(str(minilm_dir()))[0]["bert/embeddings/word_embeddings"]
    table = encoder.embeddings.word_embeddings.numpy()
    assert table.shape == (30538, 384)
    np.testing.assert_array_equal(table[:30522], stored)
    mean = stored.astype(np.float64).mean(axis=0).astype(np.float32)
    np.testing.assert_array_equal(table[30522:], np.tile(mean, (16, 1)))
    # text without the new words: same ids, same outputs as the original model
    old_ids = tokenization.FullTokenizer(str(minilm_dir() / "vocab.txt")).encode(PLAIN_TEXT)
    new_ids = tokenization.FullTokenizer(str(path)).encode(PLAIN_TEXT)
    assert new_ids == old_ids
    ids = np.array([[101] + new_ids + [102]], np.int32)
    x = {"input_ids": ids, "input_mask": np.ones_like(ids), "segment_ids": np.zeros_like(ids)}
    ours, original = encoder(x), minilm_encoder(x)
    np.testing.assert_array_equal(ours["sequence_output"], original["sequence_output"])
    np.testing.assert_array_equal(ours["pooled_output"], original["pooled_output"])
    # an appended word's id runs through the model
    appended = np.array([[101, ext.appended[0][0], 102]], np.int32)
    out = encoder({"input_ids": appended, "input_mask": np.ones_like(appended),
                   "segment_ids": np.zeros_like(appended)})
    assert np.isfinite(out["pooled_output"]).all()


TINY = BertConfig.from_preset("L-2_H-32_A-2", vocab_size=50, max_position_embeddings=16)


@pytest.mark.parametrize("fmt", ["tf1", "hf", "native"])
def test_every_format_grows_word_embeddings_and_mlm_bias(fmt, tmp_path):
    source = BertPretrainer(BertEncoder(TINY))
    bias = np.random.default_rng(0).normal(size=50).astype(np.float32)
    source.mlm_head.output_bias.assign(bias)
    path = save_weights(source, tmp_path / fmt, fmt)
    grown = BertPretrainer(BertEncoder(TINY.replace(vocab_size=53)))
    report = load_weights(grown, path, require_heads=True)
    assert [r[:3] for r in report.resized] == [("bert/embeddings/word_embeddings", 50, 53),
                                               ("cls/predictions/output_bias", 50, 53)]
    table = grown.encoder.embeddings.word_embeddings.numpy()
    old_table = source.encoder.embeddings.word_embeddings.numpy()
    np.testing.assert_array_equal(table[:50], old_table)
    np.testing.assert_array_equal(
        table[50:], np.tile(old_table.astype(np.float64).mean(0).astype(np.float32), (3, 1)))
    new_bias = grown.mlm_head.output_bias.numpy()
    np.testing.assert_array_equal(new_bias[:50], bias)
    np.testing.assert_array_equal(new_bias[50:], [np.float32(bias.astype(np.float64).mean())] * 3)
    assert "output_bias: 50 rows from the checkpoint, 3 new rows" in report.summary()


def test_more_rows_in_the_checkpoint_than_in_the_model_is_an_error():
    config = BertConfig.from_json_file(minilm_dir() / "config.json").replace(vocab_size=30000)
    with pytest.raises(CheckpointError, match=r"bert/embeddings/word_embeddings: checkpoint "
                                              r"\(30522, 384\) vs model \(30000, 384\)"):
        load_weights(BertEncoder(config), minilm_dir())


def test_more_rows_in_a_native_checkpoint_is_an_error(tmp_path):
    prefix = save_weights(BertEncoder(TINY), tmp_path, "native")
    with pytest.raises(CheckpointError, match=r"bert/embeddings/word_embeddings: checkpoint "
                                              r"\(50, 32\) vs model \(40, 32\)"):
        load_weights(BertEncoder(TINY.replace(vocab_size=40)), prefix)


def test_other_variables_must_still_match():
    config = BertConfig.from_json_file(minilm_dir() / "config.json").replace(type_vocab_size=3)
    with pytest.raises(CheckpointError, match=r"token_type_embeddings: checkpoint \(2, 384\) "
                                              r"vs model \(3, 384\)"):
        load_weights(BertEncoder(config), minilm_dir())


# ------------------------------------------------------------------ end to end
def test_build_vocab_extend_then_a_runner_uses_the_grown_model(extended, tmp_path):
    ext, _, _ = extended
    vocab, config = tmp_path / "vocab.txt", tmp_path / "config.json"
    result = run_build_vocab(
        f"--extend={minilm_dir() / 'vocab.txt'}", f"--input_file={shared_path(CORPUS)}",
        f"--output_file={vocab}", f"--num_new_tokens={NUM_NEW}",
        f"--bert_config_file={minilm_dir() / 'config.json'}", f"--output_config_file={config}")
    assert result.returncode == 0, result.stderr[-2000:]
    assert ("994 new tokens went into [unused] slots (ids 1..998) (0 slots left), 16 were "
            "appended (ids 30522..30537); vocabulary size 30522 -> 30538") in result.stderr
    assert vocab.read_text(encoding="utf-8").split("\n")[:-1] == ext.tokens
    original = json.loads((minilm_dir() / "config.json").read_text())
    assert json.loads(config.read_text()) == dict(original, vocab_size=30538)  # same HF keys

    # a runner (extract_features.py) with the new vocabulary, config and the MiniLM weights
    lines = tmp_path / "input.txt"
    lines.write_text(f"The ironclads of Tikal fought at Guadalcanal.\n{PLAIN_TEXT}\n")
    out = tmp_path / "features.jsonl"
    result = processes.run(
        [sys.executable, str(REPO / "extract_features.py"), f"--input_file={lines}",
         f"--output_file={out}", f"--vocab_file={vocab}", f"--bert_config_file={config}",
         f"--init_checkpoint={minilm_dir()}", "--max_seq_length=16", "--layers=-1",
         "--batch_size=2"], capture_output=True, text=True, cwd=REPO, timeout=300,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert result.returncode == 0, result.stderr[-2000:]
    assert "word_embeddings: 30522 rows from the checkpoint, 16 new rows" in result.stderr
    first = json.loads(out.read_text().split("\n")[0])
    tokens = [f["token"] for f in first["features"]]
    assert tokens == ["[CLS]", "the", "ironclads", "of", "tikal", "fought", "at",
                      "guadalcanal", ".", "[SEP]"]


def test_the_runners_check_the_vocabulary_against_the_config(extended, extended_config):
    from bert_tf.jobs.checks import load_tokenizer
    from bert_tf.jobs.options import ModelOptions
    _, path, _ = extended
    opts = ModelOptions(config=extended_config, vocab_file=str(path))
    assert len(load_tokenizer(opts).vocab) == 30538
    opts = ModelOptions(config=extended_config.replace(vocab_size=30522), vocab_file=str(path))
    with pytest.raises(ValueError, match="has 30538 tokens but the model's vocab_size is 30522"):
        load_tokenizer(opts)


@pytest.mark.parametrize("args, message", [
    (["--extend={tmp}/none.txt", "--num_new_tokens=5"], "--extend: vocabulary file"),
    (["--extend={vocab}"], "--extend needs --num_new_tokens"),
    (["--extend={vocab}", "--num_new_tokens=0"], "--num_new_tokens must be >= 1"),
    (["--extend={vocab}", "--num_new_tokens=5", "--vocab_size=100"],
     "--vocab_size: for learning a vocabulary, not for --extend"),
    (["--num_new_tokens=5"], "--num_new_tokens: only with --extend"),
    (["--extend={vocab}", "--num_new_tokens=5", "--bert_config_file={config}"],
     "--bert_config_file and --output_config_file go together"),
    (["--extend={vocab}", "--num_new_tokens=5", "--bert_config_file={tmp}/small.json",
      "--output_config_file={tmp}/c.json"], "vocab_size 1000 is smaller than the 30522 tokens"),
    (["--extend={extended}", "--num_new_tokens=5", "--noallow_growth"],
     "has no [unusedN] slots and --noallow_growth"),
])
def test_build_vocab_extend_reports_bad_input_in_one_line(args, message, extended, tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("".join(open(shared_path(CORPUS), encoding="utf-8").readlines()[:2000]))
    small = json.loads((minilm_dir() / "config.json").read_text())
    (tmp_path / "small.json").write_text(json.dumps(dict(small, vocab_size=1000)))
    values = {"tmp": tmp_path, "vocab": minilm_dir() / "vocab.txt", "extended": extended[1],
              "config": minilm_dir() / "config.json"}
    result = run_build_vocab(f"--input_file={corpus}", f"--output_file={tmp_path}/out.txt",
                             *[a.format(**values) for a in args])
    assert result.returncode == 1
    last = result.stderr.strip().split("\n")[-1]
    assert last.startswith("build_vocab.py: error: ") and message in last, result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out.txt").exists()


def test_build_vocab_extend_reports_a_missing_corpus(tmp_path):
    result = run_build_vocab(f"--input_file={tmp_path}/none*.txt",
                             f"--output_file={tmp_path}/v.txt",
                             f"--extend={minilm_dir() / 'vocab.txt'}", "--num_new_tokens=5")
    assert result.returncode == 1 and "--input_file: no file matches" in result.stderr
    assert not (tmp_path / "v.txt").exists()
