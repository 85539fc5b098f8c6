"""run_squad job: learning end to end (labels -> loss -> logits -> answers -> official metrics),
the output files on real SQuAD data, SQuAD 2.0, reuse of features on rerun, option checks."""

import glob
import json
import os
import random

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf import BertConfig
from bert_tf.data import squad
from bert_tf.jobs.squad import SquadOptions, prepare_train_features, run
from bert_tf.metrics import squad as squad_metrics
from bert_tf.tokenization import FullTokenizer
from helpers import minilm_dir, shared_path

# A synthetic reading task a one-layer model learns in ~100 steps: the answer is the only
# "<colour> <animal>" pair in a context of filler words, so a label or position off by one
# anywhere between the JSON offsets and the predicted text shows up as a low exact match.
COLOURS = "red green blue yellow purple orange brown black".split()
ANIMALS = "fox owl cat dog hen cow bee elk".split()
FILLER = ("the a of and in on at by we they saw went over under near far river hill town road "
          "house tree stone cloud rain sun moon day night walked ran sat stood looked").split()
QUESTION = "Which animal is it?"
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def synthetic_vocab(path):
    tokens = SPECIALS + sorted(set(COLOURS + ANIMALS + FILLER + ["which", "animal", "is", "it"]))
    tokens += [".", ",", "?"]
    path.write_text("\n".join(tokens) + "\n")
    return str(path)


def synthetic_squad(path, n, seed, impossible_every=0, prefix="q"):
    """SQuAD JSON of n questions on contexts of 8-70 filler words holding one capitalised colour
    + animal pair (the answer); with impossible_every=k, every k-th question has no pair and is
    SQuAD 2.0 unanswerable."""
    rng = random.Random(seed)
    paragraphs = []
    for i in range(n):
        words = [rng.choice(FILLER) for _ in range(rng.randint(8, 70))]
        impossible = impossible_every and i % impossible_every == 0
        qa = {"id": f"{prefix}{i}", "question": QUESTION, "answers": []}
        at = rng.randint(0, len(words))
        answer = f"{rng.choice(COLOURS).capitalize()} {rng.choice(ANIMALS).capitalize()}"
        if not impossible:
            words.insert(at, answer)
        words = [w + ("." if rng.random() < 0.1 else "") for w in words]
        context = " ".join(words)
        if not impossible:
            start = len(" ".join(words[:at])) + (1 if at else 0)
            assert context[start:start + len(answer)] == answer
            qa["answers"] = [{"text": answer, "answer_start": start}]
        if impossible_every:
            qa["is_impossible"] = bool(impossible)
        paragraphs.append({"context": context, "qas": [qa]})
    path.write_text(json.dumps({"version": "v2.0" if impossible_every else "1.1",
                                "data": [{"title": "synthetic", "paragraphs": paragraphs}]}))
    return str(path)


def slice_squad(src, dst, n):
    """The first n questions of a SQuAD file (structure kept), written to dst."""
    with open(src, encoding="utf-8") as f:
        document = json.load(f)
    articles, count = [], 0
    for article in document["data"]:
        paragraphs = []
        for paragraph in article["paragraphs"]:
            qas = paragraph["qas"][:n - count]
            count += len(qas)
            if qas:
                paragraphs.append(dict(paragraph, qas=qas))
        if paragraphs:
            articles.append(dict(article, paragraphs=paragraphs))
        if count >= n:
            break
    dst.write_text(json.dumps({"version": document.get("version", ""), "data": articles}))
    return str(dst)


def tiny_config(vocab_size, seq=64, **kwargs):
    return BertConfig.from_preset("L-1_H-32_A-2", vocab_size=vocab_size,
                                  max_position_embeddings=seq, **kwargs)


def _options(tmp_path, vocab, **kwargs):
    values = dict(config=tiny_config(len(open(vocab).read().split())), vocab_file=vocab,
                  output_dir=str(tmp_path / "out"), max_seq_length=64, doc_stride=24,
                  max_query_length=16, train_batch_size=16, predict_batch_size=32,
                  iterations_per_loop=25, save_checkpoints_steps=1000,
                  epochs_over="examples")       # the tests size training in questions
    values.update(kwargs)
    return SquadOptions(**values)


def _train_losses(output_dir):
    losses = {}
    for path in glob.glob(os.path.join(output_dir, "train", "events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                if value.tag == "loss":
                    losses[event.step] = float(tf.make_ndarray(value.tensor))
    return [losses[s] for s in sorted(losses)]


def _read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    folder = tmp_path_factory.mktemp("synthetic_squad")
    return {"vocab": synthetic_vocab(folder / "vocab.txt"),
            "train": synthetic_squad(folder / "train.json", 160, seed=1),
            "dev": synthetic_squad(folder / "dev.json", 60, seed=2, prefix="dev"),
            "train_v2": synthetic_squad(folder / "train_v2.json", 96, seed=3, impossible_every=3),
            "dev_v2": synthetic_squad(folder / "dev_v2.json", 30, seed=4, impossible_every=3,
                                      prefix="dev")}


def test_model_learns_the_task_and_answers_held_out_questions(synthetic, tmp_path):
    keras.utils.set_random_seed(0)
    opts = _options(tmp_path, synthetic["vocab"], train_file=synthetic["train"],
                    predict_file=synthetic["dev"], do_train=True, do_predict=True, do_eval=True,
                    learning_rate=1e-2, num_train_epochs=15.0)
    result = run(opts, tf.distribute.get_strategy())
    losses = _train_losses(opts.output_dir)
    assert result["train"]["step"] == int(160 / 16 * 15.0) == len(losses) * 25
    assert losses[-1] < 0.3 * losses[0], losses
    # Measured: exact match 100 on the 60 held-out questions (contexts longer than one window
    # included); a random model scores ~0.
    assert result["eval"]["exact_match"] >= 90, result["eval"]
    predictions = _read_json(tmp_path / "out" / "predictions.json")
    dev = _read_json(synthetic["dev"])["data"][0]["paragraphs"]
    gold = {p["qas"][0]["id"]: p["qas"][0]["answers"][0]["text"] for p in dev}
    assert predictions.keys() == gold.keys()
    # Answers come back in the context's own casing, e.g. "Blue Owl".
    assert sum(predictions[q] == gold[q] for q in gold) >= 0.9 * len(gold)


def test_real_squad_slice_writes_the_original_outputs(tmp_path):
    """20 real dev questions, real vocabulary, a small random model trained 2 steps on 8 real
    training questions: the three files of the original plus eval_results.json, consistent with
    each other and with the official metrics. (Real weights: quality/squad_*.)"""
    keras.utils.set_random_seed(0)
    train = slice_squad(shared_path("data/squad/train-v1.1.first44articles.json"),
                        tmp_path / "train.json", 8)
    dev = slice_squad(shared_path("data/squad/dev-v1.1.half-a.json"), tmp_path / "dev.json", 20)
    vocab = str(minilm_dir() / "vocab.txt")
    opts = SquadOptions(
        config=tiny_config(30522, seq=128), vocab_file=vocab, output_dir=str(tmp_path / "out"),
        train_file=train, predict_file=dev, do_train=True, do_predict=True, do_eval=True,
        max_seq_length=128, doc_stride=64, train_batch_size=4, num_train_epochs=1.0,
        epochs_over="examples", iterations_per_loop=2, predict_batch_size=16)
    result = run(opts, tf.distribute.get_strategy())
    out = tmp_path / "out"
    assert result["train"]["step"] == 2                 # 8 questions / batch 4
    assert not (out / "null_odds.json").exists()
    predictions = _read_json(out / "predictions.json")
    nbest = _read_json(out / "nbest_predictions.json")
    data, _ = squad_metrics.load_dataset(dev)
    qids = [qa["id"] for article in data for p in article["paragraphs"] for qa in p["qas"]]
    assert list(predictions) == qids and list(nbest) == qids
    contexts = {qa["id"]: p["context"] for article in data for p in article["paragraphs"]
                for qa in p["qas"]}
    for qid in qids:
        entries = nbest[qid]
        assert 1 <= len(entries) <= 20
        assert all(set(e) == {"text", "probability", "start_logit", "end_logit"}
                   for e in entries)
        scores = [e["start_logit"] + e["end_logit"] for e in entries]
        assert scores == sorted(scores, reverse=True)
        assert sum(e["probability"] for e in entries) == pytest.approx(1.0)
        assert entries[0]["text"] == predictions[qid]
        assert predictions[qid] in contexts[qid]            # projected back to original text
    written = _read_json(out / "eval_results.json")
    expected = squad_metrics.evaluate_v1(data, predictions)
    assert set(written) == {"exact_match", "f1", "global_step"}
    assert written["exact_match"] == pytest.approx(expected["exact_match"])
    assert written["f1"] == pytest.approx(expected["f1"])
    assert written["global_step"] == 2
    assert glob.glob(str(out / "eval" / "events.out.tfevents.*"))
    records = sum(1 for _ in tf.data.TFRecordDataset(str(out / "eval.tf_record")))
    assert records == result["predict"]["num_features"] > 20       # long contexts: 2+ windows


def test_squad_2_outputs_null_odds_and_the_v2_metrics(synthetic, tmp_path):
    keras.utils.set_random_seed(0)
    opts = _options(tmp_path, synthetic["vocab"], train_file=synthetic["train_v2"],
                    predict_file=synthetic["dev_v2"], do_train=True, do_predict=True,
                    do_eval=True, version_2_with_negative=True, learning_rate=1e-2,
                    num_train_epochs=2.0)
    first = run(opts, tf.distribute.get_strategy())
    out = tmp_path / "out"
    predictions = _read_json(out / "predictions.json")
    null_odds = _read_json(out / "null_odds.json")
    assert predictions.keys() == null_odds.keys() and len(predictions) == 30
    for qid, answer in predictions.items():
        assert (answer == "") == (null_odds[qid] > 0.0), qid   # threshold 0.0
    assert all("" in [e["text"] for e in entries]
               for entries in _read_json(out / "nbest_predictions.json").values())
    written = _read_json(out / "eval_results.json")
    for key in ("exact", "f1", "total", "HasAns_exact", "HasAns_f1", "HasAns_total", "NoAns_exact",
                "NoAns_f1", "NoAns_total", "best_exact", "best_exact_thresh", "best_f1",
                "best_f1_thresh"):
        assert key in written, key
    assert written["NoAns_total"] == 10 and written["HasAns_total"] == 20
    assert written == pytest.approx(dict(first["eval"]))

    # Rerun, predicting only with a threshold no null score exceeds: the trained checkpoint is
    # restored from output_dir and every question gets its best non-null answer.
    record = out / "train.tf_record"
    mtime = record.stat().st_mtime_ns
    again = run(SquadOptions(**dict(vars(opts), null_score_diff_threshold=1e5)),
                tf.distribute.get_strategy())
    assert again["train"]["step"] == first["train"]["step"]     # nothing left to train
    assert record.stat().st_mtime_ns == mtime                   # features reused
    assert all(_read_json(out / "predictions.json").values())


@pytest.mark.parametrize("epochs_over", ["features", "examples"])
def test_an_epoch_is_every_window_by_default_or_every_question(tmp_path, epochs_over):
    """By default an epoch is one pass over every window, as in HuggingFace; --epochs_over=examples
    counts questions, as google-research does (fewer steps when contexts span several windows)."""
    keras.utils.set_random_seed(0)
    train = slice_squad(shared_path("data/squad/train-v1.1.first44articles.json"),
                        tmp_path / "train.json", 8)
    opts = SquadOptions(
        config=tiny_config(30522, seq=128), vocab_file=str(minilm_dir() / "vocab.txt"),
        output_dir=str(tmp_path / "out"), train_file=train, do_train=True, max_seq_length=128,
        doc_stride=64, train_batch_size=4, num_train_epochs=1.0, iterations_per_loop=4,
        **({} if epochs_over == "features" else {"epochs_over": epochs_over}))
    result = run(opts, tf.distribute.get_strategy())
    windows = sum(1 for _ in tf.data.TFRecordDataset(str(tmp_path / "out" / "train.tf_record")))
    assert windows > 8                                      # long contexts: several windows each
    assert result["train"]["step"] == (windows if epochs_over == "features" else 8) // 4


def test_training_examples_are_shuffled_with_the_original_seed(synthetic, tmp_path):
    opts = _options(tmp_path, synthetic["vocab"], train_file=synthetic["train"], do_train=True)
    os.makedirs(opts.output_dir)
    tokenizer = FullTokenizer(synthetic["vocab"], do_lower_case=True)
    num_examples, num_features = prepare_train_features(opts, tokenizer)
    examples = squad.read_squad_examples(synthetic["train"], True).examples
    random.Random(12345).shuffle(examples)
    expected = squad.convert_examples_to_features(examples, tokenizer, 64, 24, 16, True)
    written = next(iter(squad.read_feature_dataset(
        os.path.join(opts.output_dir, "train.tf_record"), 64, True, num_features,
        shuffle_buffer=0)))
    assert (num_examples, num_features) == (160, len(expected))
    np.testing.assert_array_equal(written["input_ids"].numpy(),
                                  [f.input_ids for f in expected])
    np.testing.assert_array_equal(written["start_positions"].numpy(),
                                  [f.start_position for f in expected])


def _with_bad_question(src, dst):
    document = _read_json(src)
    qa = document["data"][0]["paragraphs"][3]["qas"][0]
    qa["answers"][0]["answer_start"] = 10 ** 6
    dst.write_text(json.dumps(document))
    return str(dst), qa["id"]


def test_malformed_question_is_named_or_skipped_on_request(synthetic, tmp_path):
    bad, qid = _with_bad_question(synthetic["train"], tmp_path / "bad.json")
    opts = _options(tmp_path, synthetic["vocab"], train_file=bad, do_train=True)
    with pytest.raises(squad.SquadFormatError, match=f"question id '{qid}'.*outside the context"):
        run(opts, tf.distribute.get_strategy())
    assert not (tmp_path / "out" / "train.tf_record").exists()
    tokenizer = FullTokenizer(synthetic["vocab"], do_lower_case=True)
    skipping = SquadOptions(**dict(vars(opts), skip_bad_examples=True))
    assert prepare_train_features(skipping, tokenizer)[0] == 159


@pytest.mark.parametrize("change, message", [
    (dict(do_train=False, do_predict=False), "At least one of `do_train` or `do_predict`"),
    (dict(train_file=None), "If `do_train` is True, then `train_file` must be specified"),
    (dict(predict_file=None), "If `do_predict` is True, then `predict_file` must be specified"),
    (dict(train_file="/no/such/train.json"), "`train_file` /no/such/train.json does not exist"),
    (dict(max_seq_length=64, max_query_length=61),
     r"max_seq_length \(64\) must be greater than max_query_length \(61\) \+ 3"),
    (dict(max_seq_length=128), "Cannot use sequence length 128"),
    (dict(do_predict=False, do_eval=True), "`do_eval` scores the predictions of `do_predict`"),
    (dict(vocab_file="/no/vocab.txt"), "`vocab_file` /no/vocab.txt does not exist"),
    (dict(do_lower_case=False, init_checkpoint="/m/uncased_L-12_H-768_A-12/bert_model.ckpt"),
     "--do_lower_case=False does not match"),
    (dict(doc_stride=0), "doc_stride must be >= 1"),
    (dict(n_best_size=0), "n_best_size must be >= 1"),
    (dict(epochs_over="windows"), "--epochs_over must be examples or features"),
])
def test_invalid_options_are_rejected_with_the_original_messages(synthetic, tmp_path, change,
                                                                 message):
    values = dict(train_file=synthetic["train"], predict_file=synthetic["dev"], do_train=True,
                  do_predict=True)
    opts = _options(tmp_path, synthetic["vocab"], **dict(values, **change))
    with pytest.raises(ValueError, match=message):
        opts.validate()


def test_predicting_without_any_weights_is_refused(synthetic, tmp_path):
    opts = _options(tmp_path, synthetic["vocab"], predict_file=synthetic["dev"], do_predict=True)
    with pytest.raises(ValueError, match="nothing to evaluate or predict with"):
        run(opts, tf.distribute.get_strategy())


def test_do_eval_needs_gold_answers(synthetic, tmp_path):
    document = _read_json(synthetic["dev"])
    for paragraph in document["data"][0]["paragraphs"]:
        for qa in paragraph["qas"]:
            del qa["answers"]
    hidden = tmp_path / "test.json"
    hidden.write_text(json.dumps(document))
    opts = _options(tmp_path, synthetic["vocab"], predict_file=str(hidden), do_predict=True,
                    do_eval=True)
    with pytest.raises(ValueError, match="--do_eval needs gold answers.*test.json"):
        opts.validate()


def test_do_eval_of_squad_2_data_needs_version_2_with_negative(synthetic, tmp_path):
    opts = _options(tmp_path, synthetic["vocab"], predict_file=synthetic["dev_v2"],
                    do_predict=True, do_eval=True)
    with pytest.raises(ValueError, match="unanswerable questions.*--version_2_with_negative"):
        opts.validate()


def test_vocabulary_larger_than_the_model_is_an_error(synthetic, tmp_path):
    opts = _options(tmp_path, synthetic["vocab"], predict_file=synthetic["dev"], do_predict=True,
                    config=tiny_config(10))
    with pytest.raises(ValueError, match="vocab_size is 10"):
        run(opts, tf.distribute.get_strategy())
