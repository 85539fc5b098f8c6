"""The InferenceContract (bert_tf.contract): one declaration of what a trained model needs at
inference, written beside checkpoints (inference.json) and inside exports (export_info.json),
read back by export and bert_tf.predict; flags override it and are refused where they
contradict the training; runs written before it still load and answer as before."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import test_serving_support as support
from bert_tf import contract as _contract
from bert_tf import kinds
from bert_tf.contract import InferenceContract

LEGACY = Path(__file__).parent / "support" / "legacy_runs"

CONTRACTS = {
    "classifier": InferenceContract(kind="classifier", labels=["0", "1"], text_pair=True,
                                    window_stride=16, window_pooling="max", max_windows=3),
    "regression": InferenceContract(kind="regression", text_pair=True),
    "multi_label": InferenceContract(kind="multi_label", labels=support.MULTI_LABELS,
                                     multi_label_threshold=0.35),
    "squad": InferenceContract(kind="squad", max_seq_length=support.SQUAD_SEQ,
                               max_query_length=20, max_answer_length=10, doc_stride=48),
    "tagger": InferenceContract(kind="tagger", labels=support.CONLL_LABELS),
    "multiple_choice": InferenceContract(kind="multiple_choice", num_choices=4,
                                         max_seq_length=support.CHOICE_SEQ),
    "fill_mask": InferenceContract(kind="fill_mask", top_k=3, max_seq_length=support.FILL_SEQ),
    "encoder": InferenceContract(kind="encoder", text_pair=True),
    "embedding": InferenceContract(kind="embedding", pooling="mean", normalize=True),
}


@pytest.mark.parametrize("kind", kinds.SERVED)
def test_the_export_records_the_contract_as_the_checkpoint_does(kind):
    """inference.json beside a checkpoint and an export's export_info.json hold the same
    contract: the serving head's description of itself reads back as the contract."""
    from bert_tf.serving.heads import make_head
    contract = CONTRACTS[kind]
    tokens = support.full_tokenizer().vocabulary.id_to_token
    head = make_head(kind, support.build_model(kind), tokens, contract.do_lower_case,
                     contract.max_seq_length, contract)
    info = dict(head.info(), do_lower_case=contract.do_lower_case)
    assert InferenceContract.from_info(info, "export_info") == contract
    assert {k: v for k, v in contract.to_info().items() if k != "window_stride"
            or kind != "tagger"} == {k: v for k, v in info.items() if k != "mask_token"}
    assert head.text_names == tuple(contract.text_inputs())


def test_inference_json_round_trips(tmp_path):
    contract = CONTRACTS["classifier"]
    contract.write(tmp_path)
    recorded = _contract.read(tmp_path)
    assert recorded.contract == contract and recorded.kinds == ("classifier",)
    assert {"labels", "text_pair", "window_stride"} <= recorded.known


def test_a_broken_inference_json_is_named(tmp_path):
    (tmp_path / "inference.json").write_text('{"seq_length": 64}')
    with pytest.raises(ValueError, match=r"inference.json: not an inference contract"):
        _contract.read(tmp_path)


def test_a_flag_that_contradicts_the_training_is_refused_by_name(tmp_path):
    CONTRACTS["classifier"].write(tmp_path)
    recorded = _contract.read(tmp_path)
    with pytest.raises(ValueError, match=r"^--labels=1,0 contradicts what the model was trained "
                                         r"with \(.*inference.json: 0,1\)"):
        _contract.resolve(recorded, "classifier", {"labels": ["1", "0"]})
    with pytest.raises(ValueError, match=r"^--do_lower_case=False contradicts"):
        _contract.resolve(recorded, "classifier", {"do_lower_case": False})
    with pytest.raises(ValueError, match=r"^--task=tagger, but .* records a classifier model"):
        _contract.resolve(recorded, "tagger", {})


def test_a_flag_overrides_what_may_change_at_inference(tmp_path):
    CONTRACTS["classifier"].write(tmp_path)
    recorded = _contract.read(tmp_path)
    longer = _contract.resolve(recorded, "classifier", {"max_seq_length": 256,
                                                        "labels": ("0", "1")})
    assert (longer.max_seq_length, longer.labels, longer.window_stride) == (256, ("0", "1"), 16)


def test_a_run_written_before_the_contract_is_read_from_its_files():
    recorded = _contract.read(LEGACY / "multi_label")
    assert recorded.kinds[0] == "multi_label"           # its eval_results.txt tuned a threshold
    assert recorded.contract.labels == ("LOC", "MISC", "ORG", "PER")
    assert recorded.contract.multi_label_threshold == 0.45
    windows = _contract.read(LEGACY / "mrpc_windows")
    assert windows.kinds[0] == "classifier"
    assert windows.contract.windows() == {"window_stride": 8, "window_pooling": "max",
                                          "max_windows": 0}
    assert "text_pair" not in windows.known              # run_options.json did not say


def _same_predictions(got, expected):
    got, expected = ([json.loads(line) for line in text.splitlines()] for text in (got,
                                                                                    expected))
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        assert a.get("label") == b.get("label") and a.get("labels") == b.get("labels")
        np.testing.assert_allclose(list(a["probabilities"].values()),
                                   list(b["probabilities"].values()), atol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("run, export_flags, checkpoint_flags, rows", [
    ("mrpc_windows", {"task_name": "MRPC"}, {"task_name": "MRPC"}, "rows_pairs.jsonl"),
    ("multi_label", {"task": "multi_label", "labels": ["LOC", "MISC", "ORG", "PER"]}, {},
     "rows_single.jsonl"),
])
def test_a_run_fine_tuned_before_the_contract_exports_and_predicts_as_before(
        tmp_path, run, export_flags, checkpoint_flags, rows):
    """Runs written at commit 708a44f (tests/support/legacy_runs/README.md) give the
    export_info.json and the predictions that commit's export and bert_tf.predict gave."""
    from bert_tf.jobs.export import ExportOptions
    from bert_tf.jobs.export import run as export
    from bert_tf.jobs.predict import PredictOptions
    from bert_tf.jobs.predict import json_lines, run as predict
    from bert_tf.prediction.loading import CheckpointSettings
    folder = tmp_path / run
    shutil.copytree(LEGACY / run, folder)
    expected = LEGACY / "expected"
    path = export(ExportOptions(export_dir=str(tmp_path / "export"),
                                init_checkpoint=str(folder), warmup=False, **export_flags),
                  given=list(export_flags))
    info = json.loads((Path(path) / "assets.extra" / "export_info.json").read_text())
    info.pop("tensorflow")
    assert info == json.loads((expected / f"{run}.export_info.json").read_text())
    rows = str(LEGACY / rows)
    _same_predictions(json_lines(predict(PredictOptions(model=path, input_file=rows))),
                      (expected / f"{run}.savedmodel.jsonl").read_text())
    _same_predictions(json_lines(predict(PredictOptions(
        model=str(folder), input_file=rows,
        checkpoint=CheckpointSettings(**checkpoint_flags)))),
        (expected / f"{run}.checkpoint.jsonl").read_text())
