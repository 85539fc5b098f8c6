"""The embedding kind served: export_savedmodel.py --task=embedding and bert_tf.predict give
MiniLM's in-process embeddings (real weights, real STS-B sentences); pooling from the folder or
the flags; long texts in windows."""

import json

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.checkpoints import load_encoder
from bert_tf.jobs.export import ExportOptions, run as export_run
from bert_tf.jobs.predict import PredictOptions, run as predict_run
from bert_tf.model import BertEmbedder
from bert_tf.prediction.loading import CheckpointSettings
from helpers import minilm_dir
from test_embedding_model import padded_ids, sts_sentences


def export(tmp_path, **options):
    path = export_run(ExportOptions(export_dir=str(tmp_path), init_checkpoint=str(minilm_dir()),
                                    task="embedding", warmup=False, **options))
    return path, tf.saved_model.load(path)


@pytest.fixture(scope="module")
def texts():
    return sts_sentences(12)


@pytest.fixture(scope="module")
def embedder():
    return BertEmbedder(load_encoder(minilm_dir()), pooling="mean", normalize=True)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    return export(tmp_path_factory.mktemp("embedding"), max_seq_length=64)


def test_the_export_records_the_folders_pooling(exported):
    path, _ = exported
    with open(f"{path}/assets.extra/export_info.json", encoding="utf-8") as f:
        info = json.load(f)
    assert (info["task"], info["pooling"], info["normalize"]) == ("embedding", "mean", True)


def test_raw_text_gives_the_in_process_embeddings(exported, embedder, texts):
    served = exported[1].signatures["serving_default"](text_a=tf.constant(texts))
    expected = embedder(padded_ids(texts, seq=64))["embedding"].numpy()
    assert served["embedding"].shape == (len(texts), 384)
    np.testing.assert_allclose(served["embedding"].numpy(), expected, atol=1e-5)


def test_token_ids_give_the_in_process_embeddings(exported, embedder, texts):
    features = padded_ids(texts, seq=64)
    served = exported[1].signatures["serve_features"](**{k: tf.constant(v)
                                                         for k, v in features.items()})
    np.testing.assert_allclose(served["embedding"].numpy(),
                               embedder(features)["embedding"].numpy(), atol=1e-5)


def test_predict_from_the_folder_and_from_the_export_equals_the_model(exported, embedder,
                                                                        texts):
    expected = embedder(padded_ids(texts, seq=64))["embedding"].numpy()
    from_folder = predict_run(PredictOptions(model=str(minilm_dir()), text=texts, batch_size=5,
                                             checkpoint=CheckpointSettings(max_seq_length=64)))
    from_export = predict_run(PredictOptions(model=exported[0], text=texts, batch_size=5))
    for results in (from_folder, from_export):
        assert [r["index"] for r in results] == list(range(len(texts)))
        np.testing.assert_allclose([r["embedding"] for r in results], expected, atol=1e-5)


def test_flags_override_the_folders_pooling(tmp_path, texts):
    path, loaded = export(tmp_path, max_seq_length=64, pooling="cls", normalize=False)
    model = BertEmbedder(load_encoder(minilm_dir()), pooling="cls", normalize=False)
    served = loaded.signatures["serving_default"](text_a=tf.constant(texts[:3]))
    np.testing.assert_allclose(served["embedding"].numpy(),
                               model(padded_ids(texts[:3], seq=64))["embedding"].numpy(),
                               atol=1e-5)


def window_features(text, seq, stride):
    """A text's windows as bert_tf.tokenization.windows cuts them, built here by hand."""
    ids = padded_ids([text], seq=512)["input_ids"][0]
    tokens = ids[1:int((ids > 0).sum()) - 1]
    window = seq - 2
    extra = max(len(tokens) - window, 0)
    starts = [min(i * stride, extra) for i in range(1 + -(-extra // stride))]
    rows = np.zeros((len(starts), seq), np.int32)
    for k, start in enumerate(starts):
        piece = [101, *tokens[start:start + window], 102]
        rows[k, :len(piece)] = piece
    return {"input_ids": rows, "input_mask": (rows > 0).astype(np.int32),
            "segment_ids": np.zeros_like(rows)}


def test_a_long_text_is_the_normalised_mean_of_its_windows(tmp_path, embedder, texts):
    long_text = " ".join(texts)
    _, loaded = export(tmp_path, max_seq_length=32, doc_stride=16)
    served = loaded.signatures["serving_default"](text_a=tf.constant([texts[0], long_text]))
    short, long = window_features(texts[0], 32, 16), window_features(long_text, 32, 16)
    assert len(long["input_ids"]) > 3
    both = {k: np.concatenate([short[k], long[k]]) for k in short}
    window_example = np.array([0] + [1] * len(long["input_ids"]), np.int32)
    expected = embedder(dict(both, window_example=window_example))["embedding"].numpy()
    np.testing.assert_allclose(served["embedding"].numpy(), expected, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(served["embedding"].numpy(), axis=1), 1, atol=1e-5)


def test_a_bf16_export_stays_close(tmp_path, embedder, texts):
    _, loaded = export(tmp_path, max_seq_length=64, precision="bf16")
    served = loaded.signatures["serving_default"](text_a=tf.constant(texts))["embedding"]
    assert served.dtype == tf.float32
    cosine = np.sum(served.numpy() * embedder(padded_ids(texts, seq=64))["embedding"].numpy(),
                    axis=1)
    assert cosine.min() > 0.99


def test_pooling_flags_belong_to_the_embedding_task(tmp_path):
    with pytest.raises(ValueError, match=r"--pooling: for --task=embedding, not encoder"):
        ExportOptions(export_dir=str(tmp_path), init_checkpoint=str(minilm_dir()),
                      task="encoder", pooling="max", warmup=False).resolve()


def test_an_embedding_row_takes_no_text_pair(exported):
    from bert_tf.prediction.inputs import InputError
    with pytest.raises(InputError, match=r"text_pair: not an input of a text embedding model"):
        predict_run(PredictOptions(model=exported[0], text=["a"], text_pair=["b"]))


def test_an_export_of_a_folder_asking_for_an_unsupported_pooling_names_its_file(tmp_path):
    folder = tmp_path / "st"
    (folder / "1_Pooling").mkdir(parents=True)
    for name in ("config.json", "vocab.txt", "model.safetensors", "modules.json"):
        (folder / name).symlink_to(minilm_dir() / name)
    (folder / "1_Pooling/config.json").write_text(json.dumps(
        {"word_embedding_dimension": 384, "pooling_mode_lasttoken": True}))
    with pytest.raises(ValueError, match=r"st/1_Pooling/config.json: field "
                                         r"'pooling_mode_lasttoken' asks for a pooling"):
        ExportOptions(export_dir=str(tmp_path / "out"), init_checkpoint=str(folder),
                      task="embedding", warmup=False).resolve()
