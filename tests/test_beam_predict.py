"""python -m bert_tf.predict --beam_pipeline_options: RunInference with our SavedModel handler
writes bert_tf.predict's JSON lines in input order (SST-2 rows, a tiny random classifier, the
local multi-process runner); malformed rows go to the refused-rows file naming their file and
line while every good row is predicted; a file read in chunks of any size gives every row its
line and index; two worker threads share one loaded model; bad options stop with one line saying what to do."""

import functools
import json
import sys

import numpy as np
import pytest
import test_serving_support as support
from helpers import export_savedmodel, shared_path

from bert_tf.beam import prediction, runtime, text_chunks
from bert_tf.jobs.predict import PredictOptions, run
from bert_tf.prediction import inputs, loading

MULTI = "runner=FnApiRunner,direct_num_workers=2,direct_running_mode=multi_processing"
THREADS = "runner=FnApiRunner,direct_num_workers=2,direct_running_mode=multi_threading"


@pytest.fixture(scope="module")
def saved_model(tmp_path_factory):
    model = support.build_model("classifier", seed=5)
    return export_savedmodel(model, "classifier", str(tmp_path_factory.mktemp("export")),
                             support.vocab_file(), True, 64, labels=["0", "1"], warmup=False)


@pytest.fixture
def stand_in(tmp_path):
    """A folder that passes for a classifier SavedModel until something loads it."""
    folder = tmp_path / "stand_in" / "1"
    (folder / "assets.extra").mkdir(parents=True)
    (folder / "saved_model.pb").write_bytes(b"")
    (folder / "assets.extra" / "export_info.json").write_text('{"task": "classifier"}')
    return str(folder)


def _sst2(tmp_path, count):
    lines = shared_path("data/glue/SST-2/dev.tsv").read_text(encoding="utf-8").splitlines()
    path = tmp_path / "rows.tsv"
    path.write_text("\n".join(lines[:count + 1]) + "\n", encoding="utf-8")
    return path


def _lines(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _assert_same(beam, plain):
    assert [(r["index"], r["label"]) for r in beam] == [(r["index"], r["label"]) for r in plain]
    for a, b in zip(beam, plain):
        np.testing.assert_allclose(list(a["probabilities"].values()),
                                   list(b["probabilities"].values()), atol=1e-6)


@pytest.mark.slow      # the exported model takes seconds
def test_beam_predictions_are_bert_tf_predicts_in_input_order(saved_model, tmp_path,
                                                              monkeypatch):
    """Two worker threads of one process (the multi-process runner is the benchmark's): they
    share one loaded model."""
    rows = _sst2(tmp_path, 120)
    plain = run(PredictOptions(model=saved_model, input_file=str(rows)))
    loads, load = [], loading.load_saved_model
    monkeypatch.setattr(loading, "load_saved_model", lambda path: loads.append(path) or load(path))
    out = tmp_path / "beam.jsonl"
    counts = prediction.predict_on_beam(PredictOptions(
        model=saved_model, input_file=str(rows), output_file=str(out), batch_size=16,
        beam_pipeline_options=THREADS))
    assert counts["rows"] == counts["predicted"] == 120 and counts["refused"] == 0
    assert len(loads) == 1
    _assert_same(_lines(out), plain)
    assert not (tmp_path / ("beam.jsonl" + prediction.REFUSED_SUFFIX)).exists()


@pytest.mark.slow
def test_malformed_rows_are_refused_naming_file_and_line(saved_model, tmp_path, monkeypatch):
    good = [line.split("\t")[0] for line in
            shared_path("data/glue/SST-2/dev.tsv").read_text(encoding="utf-8").splitlines()[1:9]]
    rows = tmp_path / "rows.jsonl"
    rows.write_bytes(b"".join([
        json.dumps({"text": good[0], "id": "a"}).encode() + b"\n",
        b'{"text_pair": "no first text"}\n',                  # line 2: a missing field
        json.dumps({"text": good[1]}).encode() + b"\n", b"\n",
        b'{"text": "caf\xe9 au lait"}\n',                     # line 5: not UTF-8
        b'{"text": unquoted}\n',                              # line 6: not JSON
        *(json.dumps({"text": t}).encode() + b"\n" for t in good[2:])]))
    monkeypatch.setattr(text_chunks, "describe",
                        functools.partial(text_chunks.describe, chunk_bytes=100))
    out = tmp_path / "out.jsonl"
    counts = prediction.predict_on_beam(PredictOptions(
        model=saved_model, input_file=str(rows), output_file=str(out), batch_size=4,
        beam_pipeline_options="runner=FnApiRunner"))
    assert counts == dict(counts, rows=11, predicted=8, refused=3)
    written = _lines(out)
    assert [r["index"] for r in written] == [0, 2, 5, 6, 7, 8, 9, 10] and written[0]["id"] == "a"
    refused = _lines(tmp_path / ("out.jsonl" + prediction.REFUSED_SUFFIX))
    path = str(rows)
    assert [(r["file"], r["line"]) for r in refused] == [(path, 2), (path, 5), (path, 6)]
    assert refused[0]["error"].startswith(f"{path}:2: field 'text': missing")
    assert refused[1]["error"] == f"{path}:5: not UTF-8 (byte 13 of the line)"
    assert refused[2]["error"].startswith(f"{path}:6: invalid JSON")
    plain = run(PredictOptions(model=saved_model, text=good))
    _assert_same(written, [dict(r, index=i) for r, i in zip(plain, [0, 2, 5, 6, 7, 8, 9, 10])])


@pytest.mark.parametrize("chunk_bytes", [1, 7, 64, 1 << 20])
def test_chunks_of_any_size_give_every_row_its_line_and_index(tmp_path, chunk_bytes):
    rows = _sst2(tmp_path, 30)
    text = rows.read_text(encoding="utf-8").replace("\n", "\n\n", 3)  # blank lines too
    rows.write_text("\ufeff" + text.replace("\t1\n", "\t1\textra\n", 2), encoding="utf-8")
    described = text_chunks.describe(str(rows), chunk_bytes)
    counts = dict(text_chunks.count(c, described) for c in range(described.num_chunks))
    parsed = [item for c in range(described.num_chunks)
              for item in text_chunks.parse(c, described, counts)]
    got = [(x.line, "refused") if isinstance(x, text_chunks.Refusal) else (x[1].line, x[1].text)
           for x in parsed]
    lines = rows.read_text(encoding="utf-8-sig").split("\n")
    expected = [(n, "refused" if line.endswith("\textra") else line.split("\t")[0])
                for n, line in enumerate(lines, start=1) if line and n > 1]
    assert got == expected and len(got) == 30
    assert [x[0] for x in parsed if not isinstance(x, text_chunks.Refusal)] == [
        i for i, (_, what) in enumerate(expected) if what != "refused"]


def _refused(stand_in, tmp_path, pipeline_options, **kw):
    opts = {"model": stand_in, "input_file": str(_sst2(tmp_path, 4)),
            "output_file": str(tmp_path / "out.jsonl"), "beam_pipeline_options": pipeline_options}
    with pytest.raises((runtime.BeamSetupError, inputs.InputError)) as caught:
        prediction.predict_on_beam(PredictOptions(**dict(opts, **kw)))
    assert "\n" not in str(caught.value)
    return str(caught.value)


def test_bad_options_stop_with_one_line_saying_what_to_do(stand_in, tmp_path, monkeypatch):
    assert "unknown runner 'Turbo'" in _refused(stand_in, tmp_path, "runner=Turbo")
    (tmp_path / "file").write_text("")
    message = _refused(stand_in, tmp_path, MULTI, output_file=str(tmp_path / "file" / "o"))
    assert "give a path that this machine and every worker can write" in message
    message = _refused(stand_in, tmp_path, MULTI, model=str(tmp_path / "rows.tsv"))
    assert "give a SavedModel exported by bert_tf" in message
    monkeypatch.setitem(sys.modules, "apache_beam", None)
    assert _refused(stand_in, tmp_path, MULTI).endswith("pip install 'bert_tf[beam]'")


def test_the_command_line_reports_a_bad_option_in_one_line(stand_in, tmp_path):
    from scripts_in_process import run_script
    proc = run_script("bert_tf/predict.py", f"--model={stand_in}",
                      f"--input_file={_sst2(tmp_path, 2)}", f"--output_file={tmp_path / 'o'}",
                      "--beam_pipeline_options=runner=FnApiRunner,warp=9")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        "predict.py: error: --beam_pipeline_options: unknown option 'warp' (Beam's pipeline "
        "options, for example runner=FnApiRunner,direct_num_workers=2,"
        "direct_running_mode=multi_processing)")
