"""Fill-mask with the masked-LM head of a model pre-trained by run_pretraining, and a clear
refusal for checkpoints without that head."""

import json
import os
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf import BertConfig
from bert_tf.jobs.fill_mask import (FillMaskOptions, MissingHeadError, encode_masked,
                                    load_masked_lm, run)
from bert_tf.jobs.pretraining import PretrainingOptions, run as pretrain
from bert_tf.tokenization import FullTokenizer
from bert_tf import processes
from helpers import REPO, minilm_dir

ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=str(REPO))
PROBES = ["the capital of [MASK]", "the capital of [MASK] is washington .",
          "the united [MASK] of america ||| [MASK] bless america", "we must [MASK] the budget"]


@pytest.fixture(scope="module")
def pretrained(small_corpus, tmp_path_factory):
    """A 1-layer model pre-trained for 60 steps (batches of 16) by the run_pretraining job on
    the State of the Union records of the session corpus (2,000-token vocabulary)."""
    out = tmp_path_factory.mktemp("pretrained")
    config = BertConfig.from_preset("L-1_H-64_A-2", vocab_size=small_corpus["vocab_size"],
                                    max_position_embeddings=64)
    keras.utils.set_random_seed(1)
    pretrain(PretrainingOptions(
        config=config, input_file=small_corpus["train"], output_dir=str(out), do_train=True,
        train_batch_size=16, learning_rate=3e-3, num_train_steps=60, num_warmup_steps=6,
        save_checkpoints_steps=60, iterations_per_loop=60, max_seq_length=64,
        max_predictions_per_seq=10, use_next_sentence=False), tf.distribute.get_strategy())
    vocab = open(small_corpus["vocab"], encoding="utf-8").read().split("\n")[:small_corpus[
        "vocab_size"]]
    return {"config": config, "dir": str(out), "vocab_file": small_corpus["vocab"],
            "vocab": vocab}


def _options(pretrained, **kwargs):
    return FillMaskOptions(config=pretrained["config"], init_checkpoint=pretrained["dir"],
                           vocab_file=pretrained["vocab_file"], **kwargs)


def test_probes_return_vocabulary_tokens_with_probabilities(pretrained):
    results = run(_options(pretrained, text=PROBES, top_k=5))
    assert [r["linex_index"] for r in results] == [0, 1, 2, 3]
    assert [len(r["masks"]) for r in results] == [1, 1, 2, 1]
    vocab = pretrained["vocab"]
    for result in results:
        for mask in result["masks"]:
            assert result["tokens"][mask["position"]] == "[MASK]"
            predictions = mask["predictions"]
            assert len(predictions) == 5
            for p in predictions:
                assert vocab[p["token_id"]] == p["token"]
                assert not p["token"].startswith("[")              # specials left out
            probs = [p["probability"] for p in predictions]
            assert probs == sorted(probs, reverse=True) and probs[-1] > 0
            assert sum(probs) <= 1.0
    # After 60 steps the head has learnt the masked-token frequencies (the unigram stage of
    # pre-training: it is not yet context dependent): "the" leads with ~0.040 (measured;
    # next "," ~0.027), 80x uniform.
    top = results[0]["masks"][0]["predictions"][0]
    assert top["token"] == "the" and top["probability"] > 20 / len(vocab)


def test_probabilities_are_the_heads_softmax_over_the_whole_vocabulary(pretrained):
    [result] = run(_options(pretrained, text=[PROBES[1]], top_k=8,
                            include_special_tokens=True))
    model = load_masked_lm(pretrained["config"], pretrained["dir"])
    tokenizer = FullTokenizer(pretrained["vocab_file"])
    ids = np.array([tokenizer.convert_tokens_to_ids(result["tokens"])], np.int32)
    position = result["masks"][0]["position"]
    logits = model({"input_ids": ids, "masked_lm_positions": np.array([[position]], np.int32)})
    probs = tf.nn.softmax(logits["mlm_logits"][0, 0]).numpy()
    order = np.argsort(-probs)[:8]
    predictions = result["masks"][0]["predictions"]
    assert [p["token_id"] for p in predictions] == order.tolist()
    np.testing.assert_allclose([p["probability"] for p in predictions], probs[order], rtol=1e-5)


def test_mask_is_kept_whole_and_pairs_are_packed(pretrained):
    tokenizer = FullTokenizer(pretrained["vocab_file"])
    item = encode_masked(tokenizer, 0, "the [MASK] of the union ||| god bless [MASK]", 64)
    assert item.tokens[:3] == ["[CLS]", "the", "[MASK]"]
    sep = item.tokens.index("[SEP]")
    assert item.segment_ids == [0] * (sep + 1) + [1] * (len(item.tokens) - sep - 1)
    assert [item.tokens[p] for p in item.positions] == ["[MASK]", "[MASK]"]
    assert item.positions[1] > sep


def test_bad_probes_name_their_line(pretrained, tmp_path):
    probes = tmp_path / "probes.txt"
    probes.write_text("the [MASK] of the union\nno mask here\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"probes.txt:2: no \[MASK\]"):
        run(_options(pretrained, input_file=str(probes)))
    tokenizer = FullTokenizer(pretrained["vocab_file"])
    with pytest.raises(ValueError, match="fall beyond max_seq_length=8"):
        encode_masked(tokenizer, 0, "one two three four five six seven [MASK]", 8)


def test_checkpoint_without_masked_lm_head_is_refused():
    config = BertConfig.from_json_file(minilm_dir() / "config.json")
    with pytest.raises(MissingHeadError, match=r"has no masked-LM head \(missing "
                                               r"cls/predictions/"):
        run(FillMaskOptions(config=config, init_checkpoint=str(minilm_dir()),
                            text=["the capital of [MASK] ."]))


def test_runner_writes_json_lines(pretrained, tmp_path):
    probes = tmp_path / "probes.txt"
    probes.write_text("\n".join(PROBES) + "\n\n", encoding="utf-8")
    done = processes.run(
        [sys.executable, str(REPO / "predict_masked.py"), f"--init_checkpoint={pretrained['dir']}",
         f"--vocab_file={pretrained['vocab_file']}", f"--input_file={probes}",
         f"--output_file={tmp_path / 'out.jsonl'}", "--top_k=3"],
        env=ENV, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [json.loads(line) for line in open(tmp_path / "out.jsonl", encoding="utf-8")]
    assert [line["text"] for line in lines] == PROBES          # the blank line is skipped
    assert all(len(m["predictions"]) == 3 for line in lines for m in line["masks"])


def test_export_dir_alone_exports_the_fill_mask_model(pretrained, tmp_path):
    assert run(_options(pretrained, top_k=3, export_dir=str(tmp_path / "export"))) == []
    assert (tmp_path / "export" / "1" / "saved_model.pb").is_file()
    info = json.loads((tmp_path / "export" / "1" / "assets.extra" / "export_info.json")
                      .read_text())
    assert (info["task"], info["top_k"], info["seq_length"]) == ("fill_mask", 3, 64)
    with pytest.raises(ValueError, match="give exactly one of --input_file and --text"):
        _options(pretrained).validate()
