"""run_embedding end to end: a small model fine-tuned with in-batch negatives on SQuAD questions
-> paragraphs (the shared subsets' retrieval set) evaluates by retrieval, keeps its best
checkpoint, embeds a file, resumes and exports; cosine-similarity regression on STS-B rows
evaluates by Spearman; all-MiniLM-L6-v2 as it is ranks STS-B pairs as sentence-transformers
reports. (Fine-tuned MiniLM against sentence-transformers' fit: quality/embedding_finetune.py.)"""

import dataclasses
import json
import logging
import shutil

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf import BertConfig
from bert_tf.checkpoints import find_config
from bert_tf.data.embedding import write_squad_retrieval
from bert_tf.jobs.embedding import EmbeddingOptions, run
from bert_tf.metrics.results import read_eval_results
from helpers import minilm_dir, shared_path

RETRIEVAL = ("mrr_at_10", "recall_at_1", "recall_at_10", "ndcg_at_10")


def tiny_options(folder, **values):
    config = BertConfig.from_preset("L-1_H-64_A-2", vocab_size=30522, max_position_embeddings=64)
    return EmbeddingOptions(config=config, output_dir=str(folder / "out"),
                            vocab_file=str(shared_path("data/reference/vocab.txt")),
                            max_seq_length=64, train_batch_size=8, eval_batch_size=32,
                            learning_rate=1e-3, iterations_per_loop=4, **values)


@pytest.fixture(scope="module")
def squad_set(tmp_path_factory):
    folder = tmp_path_factory.mktemp("squad_retrieval")
    write_squad_retrieval(shared_path("data/squad/train-v1.1.first44articles.json"),
                          shared_path("data/squad/dev-v1.1.half-a.json"), folder,
                          max_articles=1)
    return folder


@pytest.fixture(scope="module")
def trained(squad_set, tmp_path_factory):
    folder = tmp_path_factory.mktemp("embedding")
    keras.utils.set_random_seed(3)
    opts = tiny_options(folder, train_file=str(squad_set / "train.jsonl"),
                        eval_file=str(squad_set / "dev.jsonl"),
                        corpus_file=str(squad_set / "dev_corpus.jsonl"),
                        predict_file=str(squad_set / "dev_corpus.jsonl"), do_train=True,
                        do_eval=True, do_predict=True, max_train_examples=64,
                        max_eval_examples=40, eval_every_steps=4, symmetric=True,
                        export_dir=str(folder / "export"))
    return {"opts": opts, "result": run(opts, tf.distribute.get_strategy()), "folder": folder}


def test_retrieval_evaluation_is_written_for_the_best_checkpoint(trained):
    result, out = trained["result"], trained["folder"] / "out"
    assert result["train"]["step"] == 8                  # 64 rows / batch 8, one epoch
    written = read_eval_results(out / "eval_results.txt")
    assert written["global_step"] == result["best_step"]
    for metric in RETRIEVAL:
        assert 0.0 <= written[metric] <= 1.0
        assert written[metric] == pytest.approx(result["eval"][metric])
    assert written["recall_at_1"] <= written["recall_at_10"]
    history = [json.loads(line) for line in (out / "eval_history.jsonl").read_text().splitlines()]
    assert [h["step"] for h in history] == [4, 8]
    assert json.loads((out / "run_options.json").read_text())["options"]["pooling"] == "mean"


def test_predictions_embed_every_text_of_the_file(trained):
    rows = [json.loads(line) for line in open(trained["result"]["predict"], encoding="utf-8")]
    corpus = [json.loads(line)["text"]
              for line in open(trained["opts"].predict_file, encoding="utf-8")]
    assert [r["text"] for r in rows] == corpus
    assert {len(r["embedding"]) for r in rows} == {64}


def test_the_export_embeds_raw_text_as_the_trained_model(trained):
    served = tf.saved_model.load(trained["result"]["export"]).signatures["serving_default"]
    rows = [json.loads(line) for line in open(trained["result"]["predict"], encoding="utf-8")]
    out = served(text_a=tf.constant([r["text"] for r in rows[:2]]))["embedding"].numpy()
    # predictions.jsonl is of the model at its end: the best step's weights (loaded at end)
    np.testing.assert_allclose(out, [r["embedding"] for r in rows[:2]], atol=1e-4)


def test_a_run_folder_exports_with_the_pooling_it_trained(trained, tmp_path):
    """The pooling a run trained with is the export's (inference.json, or run_options.json of
    a run of old), and a flag contradicting it is refused by name."""
    from bert_tf.jobs.export import contract_of_flags
    contract = json.loads((trained["folder"] / "out" / "inference.json").read_text())
    assert (contract["pooling"], contract["normalize"]) == (trained["opts"].pooling,
                                                            trained["opts"].normalize)
    record = json.loads((trained["folder"] / "out" / "run_options.json").read_text())
    record["options"].update(pooling="cls", normalize=True)  # a run given those flags
    (tmp_path / "run_options.json").write_text(json.dumps(record))
    taken = contract_of_flags(str(tmp_path), {"task": "embedding"})
    assert (taken.pooling, taken.normalize) == ("cls", True)
    with pytest.raises(ValueError, match=r"^--pooling=max contradicts what the model was "
                                         r"trained with \(.*run_options.json: cls\)"):
        contract_of_flags(str(tmp_path), {"task": "embedding", "pooling": "max"})


def test_a_rerun_with_more_epochs_resumes(trained, tmp_path, caplog):
    shutil.copytree(trained["folder"] / "out", tmp_path / "out")      # the run's own folder
    opts = dataclasses.replace(trained["opts"], output_dir=str(tmp_path / "out"),
                               num_train_epochs=1.5, do_eval=False, eval_every_steps=0,
                               do_predict=False, export_dir=None)
    with caplog.at_level(logging.INFO, logger="bert_tf"):
        result = run(opts, tf.distribute.get_strategy())
    assert "at step 8" in caplog.text and "resumed from" in caplog.text
    assert result["train"]["step"] == 12


def test_cosine_loss_trains_on_sts_b_and_evaluates_spearman(tmp_path):
    lines = open(shared_path("data/glue/STS-B/dev.tsv"), encoding="utf-8").read().splitlines()
    path = tmp_path / "sts.tsv"
    path.write_text("\n".join(lines[:49]) + "\n", encoding="utf-8")
    opts = tiny_options(tmp_path, train_file=str(path), eval_file=str(path), loss="cosine",
                        do_train=True, do_eval=True, num_train_epochs=1.0)
    result = run(opts, tf.distribute.get_strategy())
    assert result["train"]["step"] == 6
    assert set(result["eval"]) == {"spearman", "pearson", "global_step"}
    assert -1.0 <= result["eval"]["spearman"] <= 1.0


def test_minilm_ranks_sts_b_pairs_zero_shot(tmp_path):
    folder = str(minilm_dir())
    opts = EmbeddingOptions(config=find_config(folder), init_checkpoint=folder,
                            output_dir=str(tmp_path / "out"), eval_file=str(
                                shared_path("data/glue/STS-B/dev.tsv")),
                            eval_type="sts", do_eval=True, max_eval_examples=200)
    evaluation = run(opts, tf.distribute.get_strategy())["eval"]
    # all-MiniLM-L6-v2's STS-B dev Spearman is about 0.87 over all 1,500 pairs
    assert evaluation["spearman"] > 0.8, evaluation
