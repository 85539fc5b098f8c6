"""extract_features: google-research's input and JSON-lines output, field by field; compact
.npz / .tfrecord files; resuming after an interruption."""

import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf import BertConfig, BertEncoder
from bert_tf.checkpoints import save_weights
from bert_tf.jobs import features as features_job
from bert_tf.jobs.features import FeatureOptions, run
from bert_tf.tokenization import FullTokenizer
from scripts_in_process import run_script
from helpers import minilm_dir, shared_path

LINES = ["Who was Jim Henson ? ||| Jim Henson was a puppeteer",
         "The quick brown fox jumps over the lazy dog.",
         "",
         "Zürich café ||| naïve résumé ||| twice",
         " ".join(["word"] * 40) + " ||| " + " ".join(["other"] * 10),
         "a ||| "]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """A small random BERT saved as a google-research checkpoint folder."""
    folder = tmp_path_factory.mktemp("features_model")
    keras.utils.set_random_seed(3)
    config = BertConfig.from_preset("L-4_H-32_A-2", vocab_size=30522)
    encoder = BertEncoder(config)
    prefix = save_weights(encoder, str(folder / "ckpt"), "tf1")
    vocab = str(shared_path("data/reference/vocab.txt"))
    inputs = folder / "input.txt"
    inputs.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    return {"config": config, "encoder": encoder, "checkpoint": prefix, "vocab": vocab,
            "input": str(inputs), "folder": folder}


def _options(model, tmp_path, **kwargs):
    kwargs.setdefault("output_file", str(tmp_path / "out.jsonl"))
    return FeatureOptions(config=model["config"], input_file=model["input"],
                          init_checkpoint=model["checkpoint"], vocab_file=model["vocab"],
                          max_seq_length=32, batch_size=4, **kwargs)


def _read(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def _expected_tokens(tokenizer, line, max_seq_length):
    """google-research's packing, written out independently."""
    line = line.strip()
    a, sep, b = line.rpartition(" ||| ")
    if not sep:
        a, b = line, ""
    tokens_a, tokens_b = tokenizer.tokenize(a), tokenizer.tokenize(b) if b else []
    if tokens_b:
        while len(tokens_a) + len(tokens_b) > max_seq_length - 3:
            (tokens_a if len(tokens_a) > len(tokens_b) else tokens_b).pop()
        return ["[CLS]"] + tokens_a + ["[SEP]"] + tokens_b + ["[SEP]"], len(tokens_a) + 2
    tokens_a = tokens_a[:max_seq_length - 2]
    return ["[CLS]"] + tokens_a + ["[SEP]"], len(tokens_a) + 2


@pytest.fixture(scope="module")
def extracted(model, tmp_path_factory):
    """One run with the default --layers, JSON lines plus a per-token .npz."""
    folder = tmp_path_factory.mktemp("extracted")
    result = run(_options(model, folder, compact_file=str(folder / "f.npz")),
                 tf.distribute.get_strategy())
    return {"result": result, "folder": folder, "records": _read(folder / "out.jsonl")}


def test_json_lines_match_the_original_format_field_by_field(model, extracted):
    assert extracted["result"]["lines"] == len(LINES)
    records = extracted["records"]
    tokenizer = FullTokenizer(model["vocab"])
    for index, (line, record) in enumerate(zip(LINES, records)):
        assert list(record) == ["linex_index", "features"]
        assert record["linex_index"] == index
        tokens, segment_a = _expected_tokens(tokenizer, line, 32)
        assert [f["token"] for f in record["features"]] == tokens
        # The same input padded to max_seq_length, as the original runs it.
        ids = np.zeros((1, 32), np.int32)
        ids[0, :len(tokens)] = tokenizer.convert_tokens_to_ids(tokens)
        mask = (ids > 0).astype(np.int32)
        segments = np.zeros_like(ids)
        segments[0, segment_a:len(tokens)] = 1
        out = model["encoder"]({"input_ids": ids, "input_mask": mask, "segment_ids": segments})
        for i, feature in enumerate(record["features"]):
            assert list(feature) == ["token", "layers"]
            assert [layer["index"] for layer in feature["layers"]] == [-1, -2, -3, -4]
            for layer in feature["layers"]:
                assert list(layer) == ["index", "values"]
                values = layer["values"]
                assert len(values) == 32
                assert values == [round(v, 6) for v in values]          # 6 decimals
                wanted = out["encoder_outputs"][layer["index"]].numpy()[0, i]
                np.testing.assert_allclose(values, wanted, atol=2e-6)
    assert records[3]["features"][1]["token"] == "zurich"
    assert len(records[4]["features"]) == 32                             # truncated pair
    assert [f["token"] for f in records[5]["features"]] == ["[CLS]", "a", "|", "|", "|",
                                                            "[SEP]"]


def test_minilm_features_match_huggingface_reference(tmp_path):
    """all-MiniLM-L6-v2 through extract_features vs. stored HuggingFace activations."""
    sidecar = json.loads(shared_path("data/reference/minilm_l6_reference.json").read_text())
    reference = np.load(shared_path("data/reference/minilm_l6_reference.npz"))
    chosen = [0, 4, 9, 10, 11]       # plain, numbers, 128 tokens cut, two pairs
    lines = []
    for n in chosen:
        example = sidecar["examples"][n]
        lines.append(example["text"] + (f" ||| {example['text_pair']}"
                                        if example.get("text_pair") else ""))
    (tmp_path / "in.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    config = BertConfig.from_json_file(minilm_dir() / "config.json")
    opts = FeatureOptions(config=config, input_file=str(tmp_path / "in.txt"),
                          output_file=str(tmp_path / "out.jsonl"),
                          init_checkpoint=str(minilm_dir()), layers="-1,0")
    run(opts)
    for n, record in zip(chosen, _read(tmp_path / "out.jsonl")):
        example = sidecar["examples"][n]
        assert [f["token"] for f in record["features"]] == example["tokens"]
        hidden = reference[f"hidden_states_{n:02d}"]        # [7, L, H]: embeddings, layers 1-6
        last = np.array([f["layers"][0]["values"] for f in record["features"]])
        first = np.array([f["layers"][1]["values"] for f in record["features"]])
        np.testing.assert_allclose(last, hidden[6], atol=1e-4)
        np.testing.assert_allclose(first, hidden[1], atol=1e-4)


def _concatenated(record):
    return np.array([sum((layer["values"] for layer in f["layers"]), [])
                     for f in record["features"]])


def test_compact_npz_per_token_holds_the_json_values(model, extracted):
    z = np.load(extracted["folder"] / "f.npz")
    assert sorted(z.files) == ["features", "input_ids", "layers", "linex_index", "row_splits"]
    assert z["layers"].tolist() == [-1, -2, -3, -4]
    assert z["linex_index"].tolist() == list(range(6))
    splits = z["row_splits"]
    assert z["features"].shape == (splits[-1], 128) and z["input_ids"].shape == (splits[-1],)
    tokenizer = FullTokenizer(model["vocab"])
    for n, record in enumerate(extracted["records"]):
        rows = z["features"][splits[n]:splits[n + 1]]
        assert len(rows) == len(record["features"])
        np.testing.assert_allclose(rows, _concatenated(record), atol=6e-7)
        assert z["input_ids"][splits[n]:splits[n + 1]].tolist() == \
            tokenizer.convert_tokens_to_ids([f["token"] for f in record["features"]])


@pytest.mark.parametrize("pooling", ["mean", "cls", "pooler"])
def test_compact_npz_pooled_per_line(model, extracted, tmp_path, pooling):
    opts = _options(model, tmp_path, compact_file=str(tmp_path / "p.npz"), pooling=pooling,
                    output_file=None, compact_dtype="float16")
    run(opts)
    z = np.load(tmp_path / "p.npz")
    assert z["features"].dtype == np.float16
    assert z["features"].shape == (6, 32 if pooling == "pooler" else 128)
    tokenizer = FullTokenizer(model["vocab"])
    for n, record in enumerate(extracted["records"]):
        concat = _concatenated(record)
        if pooling == "pooler":
            tokens = [f["token"] for f in record["features"]]
            ids = tokenizer.convert_tokens_to_ids(tokens)
            segments = np.zeros((1, len(ids)), np.int32)
            seps = [i for i, t in enumerate(tokens) if t == "[SEP]"]
            if len(seps) == 2:                                  # a pair: B is segment 1
                segments[0, seps[0] + 1:] = 1
            wanted = model["encoder"]({"input_ids": np.array([ids], np.int32),
                                       "segment_ids": segments})["pooled_output"].numpy()[0]
        else:
            wanted = concat.mean(0) if pooling == "mean" else concat[0]
        np.testing.assert_allclose(z["features"][n], wanted, atol=2e-3)     # float16


def test_compact_tfrecord_one_example_per_line(model, tmp_path):
    opts = _options(model, tmp_path, compact_file=str(tmp_path / "f.tfrecord"), layers="-1",
                    output_file=None)
    run(opts)
    records = list(tf.data.TFRecordDataset(str(tmp_path / "f.tfrecord")))
    assert len(records) == 6
    example = tf.train.Example.FromString(records[0].numpy()).features.feature
    shape = example["shape"].int64_list.value
    tokens = [t.decode() for t in example["tokens"].bytes_list.value]
    assert tokens[:3] == ["[CLS]", "who", "was"] and list(shape) == [len(tokens), 32]
    assert len(example["features"].float_list.value) == shape[0] * shape[1]
    assert example["linex_index"].int64_list.value[0] == 0


def test_interrupted_run_resumes_to_identical_output(model, extracted, tmp_path, monkeypatch):
    reference = extracted["folder"]
    out = tmp_path / "resumed"
    opts = _options(model, out, compact_file=str(out / "f.npz"), commit_every=2)
    original_write = features_job._Outputs.write
    calls = {"n": 0}

    def failing_write(self, *args):
        calls["n"] += 1
        if calls["n"] == 5:
            raise KeyboardInterrupt("simulated kill")
        return original_write(self, *args)

    monkeypatch.setattr(features_job._Outputs, "write", failing_write)
    with pytest.raises(KeyboardInterrupt):
        run(opts)
    assert not (out / "out.jsonl").exists()                   # nothing half-written in place
    state = json.loads((out / "out.jsonl.progress.json").read_text())
    assert state["lines_done"] == 4                           # committed after 4 lines
    monkeypatch.setattr(features_job._Outputs, "write", original_write)
    result = run(opts)
    assert result["lines"] == 6
    assert (out / "out.jsonl").read_bytes() == (reference / "out.jsonl").read_bytes()
    a, b = np.load(out / "f.npz"), np.load(reference / "f.npz")
    for key in a.files:
        np.testing.assert_array_equal(a[key], b[key])
    assert not (out / "out.jsonl.progress.json").exists()
    assert sorted(os.listdir(out)) == ["f.npz", "out.jsonl"]


def test_bad_layer_index_is_refused(model, tmp_path):
    with pytest.raises(ValueError, match="layer -5 does not exist in a 4-layer model"):
        _options(model, tmp_path, layers="-1,-5").validate()
    with pytest.raises(ValueError, match="comma-separated integers"):
        _options(model, tmp_path, layers="last").validate()


def test_runner_uses_google_flags(model, tmp_path):
    # The script as `python extract_features.py` runs it (absl flags, cli.run), in this
    # process: its flags are the behaviour here, not a fresh interpreter.
    done = run_script(
        "extract_features.py", f"--input_file={model['input']}",
        f"--output_file={tmp_path / 'cli.jsonl'}", f"--vocab_file={model['vocab']}",
        f"--bert_config_file={model['folder'] / 'ckpt' / 'bert_config.json'}",
        f"--init_checkpoint={model['checkpoint']}", "--layers=-1,-3", "--max_seq_length=32",
        "--batch_size=8", "--use_one_hot_embeddings=false",
        f"--export_dir={tmp_path / 'export'}")
    assert done.returncode == 0, done.stderr[-3000:]
    records = _read(tmp_path / "cli.jsonl")
    assert len(records) == 6
    assert [layer["index"] for layer in records[0]["features"][0]["layers"]] == [-1, -3]
    # --export_dir: the encoder, taking text_b too since the input has `a ||| b` lines.
    assert (tmp_path / "export" / "1" / "saved_model.pb").is_file()
    info = json.loads((tmp_path / "export" / "1" / "assets.extra" / "export_info.json")
                      .read_text())
    assert (info["task"], info["text_inputs"]) == ("encoder", ["text_a", "text_b"])
