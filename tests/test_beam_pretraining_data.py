"""create_pretraining_data.py --beam_pipeline_options: the Beam pipeline writes the pool's bytes
(two outputs and one, dynamic masking, whole-word masking) on the local multi-process runner,
another seed other bytes; an interrupted pipeline resumes rewriting only the missing shards;
bad options stop with one line saying what to do. Small slices of the shared corpus; the
runner is pinned to the FnApiRunner (the default would try Prism, which downloads)."""

import hashlib
import subprocess
import sys

import pytest
from helpers import REPO, corpus_slice, shared_path

from bert_tf.beam import pretraining_data as beam_job
from bert_tf.beam import runtime
from bert_tf.data.pretraining import (
    PretrainingDataOptions,
    create_pretraining_data,
    shard_worker,
)

MULTI = "runner=FnApiRunner,direct_num_workers=2,direct_running_mode=multi_processing"
IN_PROCESS = "runner=FnApiRunner"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("corpus")
    return ",".join([
        corpus_slice("wikitext2_raw_valid_test.sentences.txt", tmp / "wiki.txt", 60_000),
        corpus_slice("gutenberg_prose.sentences.txt", tmp / "gutenberg.txt", 40_000)])


def _options(**kw):
    return PretrainingDataOptions(**{"vocab_file": str(shared_path("data/reference/vocab.txt")),
                                     "dupe_factor": 2, "shard_size_mb": 0.02,
                                     "max_seq_length": 64, **kw})


def _outputs(folder, count):
    return [str(folder / f"out-{i}.tfrecord") for i in range(count)]


def _digests(paths):
    return [hashlib.sha256(open(p, "rb").read()).hexdigest() for p in paths]


def _both(corpus, tmp_path, count, pipeline_options=MULTI, **kw):
    """(pool's digests, Beam's digests, pool summary, Beam summary) for the same flags."""
    pool_out, beam_out = _outputs(tmp_path / "pool", count), _outputs(tmp_path / "beam", count)
    pool = create_pretraining_data(corpus, pool_out, _options(**kw), num_workers=2)
    beam = beam_job.create_pretraining_data(corpus, beam_out, _options(**kw), pipeline_options)
    return _digests(pool_out), _digests(beam_out), pool, beam


@pytest.mark.slow      # each pipeline takes seconds (the multi-process one starts workers)
@pytest.mark.parametrize("count,kw", [(2, {}), (1, {}), (2, {"dynamic_masking": True}),
                                      (1, {"do_whole_word_mask": True})],
                         ids=["two-outputs", "one-output", "dynamic-masking", "whole-word"])
def test_beam_writes_the_pools_bytes_and_statistics(corpus, tmp_path, count, kw):
    pool_digests, beam_digests, pool, beam = _both(corpus, tmp_path, count, **kw)
    assert beam_digests == pool_digests
    assert beam["shards"] > 2 and beam["shards_reused"] == 0
    varying = {"seconds", "instances_per_second", "fingerprint", "output_files", "num_workers",
               "runner", "shards_reused", "input_files"}
    assert {k: v for k, v in beam.items() if k not in varying} == (
        {k: v for k, v in pool.items() if k not in varying})


@pytest.mark.slow
def test_another_seed_gives_other_bytes(corpus, tmp_path):
    outputs = _outputs(tmp_path / "a", 1)
    beam_job.create_pretraining_data(corpus, outputs, _options(), IN_PROCESS)
    other = _outputs(tmp_path / "b", 1)
    beam_job.create_pretraining_data(corpus, other, _options(random_seed=7), IN_PROCESS)
    assert _digests(outputs) != _digests(other)


@pytest.mark.slow
def test_an_interrupted_pipeline_resumes_rewriting_only_the_missing_shards(
        corpus, tmp_path, monkeypatch):
    outputs, pool = _outputs(tmp_path / "beam", 2), _outputs(tmp_path / "pool", 2)
    create_pretraining_data(corpus, pool, _options(), num_workers=1)

    def preempted(item, outputs):
        raise RuntimeError("worker pre-empted")

    with monkeypatch.context() as patch:
        patch.setattr(beam_job, "_concatenate", preempted)
        with pytest.raises(Exception, match="pre-empted"):
            beam_job.create_pretraining_data(corpus, outputs, _options(), IN_PROCESS)
    layout = beam_job._Layout(outputs)
    shards = len(runtime.list_files(runtime.join(layout.work_dir, "part-*.json")))
    assert shards > 3
    runtime.delete([layout.marker(1), *layout.parts(3)])
    processed, process = [], shard_worker.ShardProcessor.process

    def spy(self, shard, part_paths):
        processed.append(shard.index)
        return process(self, shard, part_paths)

    monkeypatch.setattr(shard_worker.ShardProcessor, "process", spy)
    summary = beam_job.create_pretraining_data(corpus, outputs, _options(), IN_PROCESS)
    assert sorted(processed) == [1, 3]
    assert summary["shards_reused"] == shards - 2
    assert _digests(outputs) == _digests(pool)
    assert not runtime.exists(layout.work_dir)
    again = beam_job.create_pretraining_data(corpus, outputs, _options(), IN_PROCESS)
    assert again["fingerprint"] == summary["fingerprint"] and sorted(processed) == [1, 3]


def _setup_error(corpus, output, pipeline_options):
    with pytest.raises(runtime.BeamSetupError) as caught:
        beam_job.create_pretraining_data(corpus, output, _options(), pipeline_options)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_an_unknown_runner_is_refused_naming_the_known_ones(corpus, tmp_path):
    message = _setup_error(corpus, str(tmp_path / "o.tfrecord"), "runner=MagicRunner")
    assert "unknown runner 'MagicRunner'" in message and "FnApiRunner" in message


def test_an_unknown_option_is_refused(corpus, tmp_path):
    message = _setup_error(corpus, str(tmp_path / "o.tfrecord"), "runner=FnApiRunner,speed=11")
    assert "unknown option 'speed'" in message


def test_a_missing_beam_says_how_to_install_it(corpus, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "apache_beam", None)     # import apache_beam fails
    message = _setup_error(corpus, str(tmp_path / "o.tfrecord"), MULTI)
    assert message.endswith("pip install 'bert_tf[beam]'")


def test_an_output_folder_nobody_can_write_is_refused(corpus, tmp_path):
    (tmp_path / "file").write_text("not a folder")
    output = str(tmp_path / "file" / "o.tfrecord")
    message = _setup_error(corpus, output, MULTI)
    assert message.startswith(f"--output_file {output}: cannot write to ")
    assert "give a path that this machine and every worker can write" in message


@pytest.mark.parametrize("modules", ["create_pretraining_data, bert_tf.beam.pretraining_data",
                                     "bert_tf.predict, bert_tf.beam.prediction"])
def test_beam_is_imported_only_where_the_beam_paths_run(modules):
    code = f"import sys; import {modules}; print('apache_beam' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.stdout.strip() == "False", done.stderr[-2000:]
