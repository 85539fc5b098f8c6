"""create_pretraining_data as an Apache Beam pipeline (create_pretraining_data.py
--beam_pipeline_options=...): the pool's job, with Beam's runners and file systems.

The launcher plans the shards (inputs.plan_shards) and hands the pipeline their descriptions
(file, byte range); each worker reads its shards' text itself and runs the pool's own
ShardProcessor, built once per worker (DoFn.setup), writing the shard's part files into
.<first output>.beam-work/ (temporary names, then renamed). A second stage deals the parts
round-robin over the output files exactly as the pool appends them (record g of the run goes
to output g % n), so the bytes are the pool's whatever the runner and its number of workers.

A rerun with the same arguments skips the shards whose parts are complete (a failed or
pre-empted pipeline resumes) and does nothing when the summary says the output is complete;
other arguments start over. The summary is the pool's, plus runner and shards_reused.
"""

import dataclasses
import hashlib
import json
import logging
import os
import time

from bert_tf.beam import runtime
from bert_tf.data.pretraining import inputs, job
from bert_tf.data.pretraining import stats as stats_lib

logger = logging.getLogger(__name__)

FORMAT_VERSION = 1


class _Layout:
    """Where the job keeps its outputs and work files (any Beam file system)."""

    def __init__(self, outputs):
        self.outputs = outputs
        folder, name = runtime.split(outputs[0])
        self.work_dir = runtime.join(folder, f".{name}.beam-work")
        self.fingerprint = runtime.join(self.work_dir, "fingerprint")
        self.totals = runtime.join(self.work_dir, "totals.json")
        self.summary = job.summary_path(outputs)

    def parts(self, shard_index):
        return [runtime.join(self.work_dir, f"part-{shard_index:06d}-{j:04d}.tfrecord")
                for j in range(len(self.outputs))]

    def marker(self, shard_index):
        return runtime.join(self.work_dir, f"part-{shard_index:06d}.json")


def read_json(path):
    try:
        return json.loads(runtime.read_bytes(path).decode("utf-8"))
    except (OSError, ValueError):  # missing or unreadable (BeamIOError is an OSError)
        return None


def write_json(path, value):
    runtime.write_bytes(path, json.dumps(value, indent=1).encode("utf-8"))


# --------------------------------------------------------------------------- outputs
def _deal(results, layout):
    """All shards' (index, marker) -> (output k, its parts in order): part j of a shard goes to
    output (instances before the shard + j) % n, as the pool appends them. Writes the totals."""
    n = len(layout.outputs)
    plan, records = [[] for _ in range(n)], [0] * n
    totals, examples, before = stats_lib.Stats(), [], 0
    for index, marker in sorted(results, key=lambda item: item[0]):
        for j, part in enumerate(layout.parts(index)):
            k = (before + j) % n
            plan[k].append(part)
            records[k] += marker["counts"][j]
        shard_stats = stats_lib.Stats.from_json(marker["stats"])
        before += shard_stats.instances
        totals.add(shard_stats)
        examples = examples or marker["examples"]
    write_json(layout.totals, {"stats": totals.to_json(), "output_records": records,
                                "examples": examples, "shards": len(results)})
    return list(enumerate(plan))


def _concatenate(item, outputs):
    """Writes output k as its parts one after the other (temporary name, then renamed)."""
    k, parts = item
    runtime.concatenate(outputs[k], parts)
    return k


def _build(pipeline, shards, options, vocab, layout):
    beam = runtime.import_beam()
    from bert_tf.beam.shard_fn import ShardFn
    results = (pipeline
               | "Shards" >> beam.Create([(s.index, s) for s in shards])
               | "Spread" >> beam.Reshuffle()
               | "Descriptions" >> beam.Values()
               | "Process" >> beam.ParDo(ShardFn(options, vocab, layout)))
    _ = (results
         | "AllShards" >> beam.combiners.ToList()
         | "Deal" >> beam.FlatMap(_deal, layout)
         | "SpreadOutputs" >> beam.Reshuffle()
         | "Concatenate" >> beam.Map(_concatenate, layout.outputs))


# --------------------------------------------------------------------------- the launcher
def _resolve(patterns):
    """Input files of comma-separated paths/globs: local ones as the pool resolves them, URLs
    through Beam's file systems (each glob's matches sorted)."""
    files = []
    for pattern in job.split_names(patterns):
        if not runtime.is_url(pattern):
            files.extend(inputs.resolve_input_files([pattern]))
            continue
        matches = sorted(runtime.list_files(pattern))
        if not matches:
            raise inputs.InputError(f"input pattern {pattern!r} matches no files")
        files.extend(matches)
    if not files:
        raise inputs.InputError("no input files given")
    return files


def _check_outputs(outputs, files):
    if len(set(outputs)) != len(outputs):
        raise ValueError(f"output_file names a file twice: {','.join(outputs)}")
    for output in outputs:
        if output in files:
            raise ValueError(f"output file {output} is also an input file")
        if not runtime.is_url(output) and os.path.isdir(output):
            raise ValueError(f"output file {output} is a directory")


def _fingerprint(options, files, outputs):
    with open(options.vocab_file, "rb") as f:
        vocab_sha256 = hashlib.sha256(f.read()).hexdigest()
    record = {"format": FORMAT_VERSION, "runner": "beam", "options": dataclasses.asdict(options),
              "vocab_sha256": vocab_sha256, "outputs": outputs,
              "inputs": [[f, *runtime.signature(f)] for f in files]}
    return hashlib.sha256(json.dumps(record, sort_keys=True).encode()).hexdigest()


def _already_complete(layout, fingerprint):
    """The summary of a finished run with the same fingerprint whose outputs are intact."""
    summary = read_json(layout.summary)
    if not summary or summary.get("fingerprint") != fingerprint:
        return None
    sizes = summary.get("output_bytes", [])
    intact = len(sizes) == len(layout.outputs) and all(
        runtime.exists(o) and runtime.size(o) == s for o, s in zip(layout.outputs, sizes))
    return summary if intact else None


def _start(layout, fingerprint):
    """Keeps the work files of an earlier run with the same fingerprint, else starts afresh."""
    if runtime.exists(layout.fingerprint) and (
            runtime.read_bytes(layout.fingerprint).decode() == fingerprint):
        logger.info("resuming: shards complete in %s are kept", layout.work_dir)
        return
    runtime.delete([layout.work_dir])
    runtime.write_bytes(layout.fingerprint, fingerprint.encode())


def _prepare(input_files, output_files, options, beam_options):
    """Checks everything the workers will need; returns (files, layout, fingerprint)."""
    options.validate()
    files = [runtime.absolute(f) for f in _resolve(input_files)]
    outputs = [runtime.absolute(o) for o in job.split_names(output_files)]
    if not outputs:
        raise ValueError("no output file given")
    _check_outputs(outputs, files)
    runtime.check_visible(beam_options, [("input_file", f) for f in files]
                          + [("output_file", o) for o in outputs])
    for output in outputs:
        runtime.check_writable(runtime.split(output)[0], "output_file", output)
    return files, _Layout(outputs), _fingerprint(options, files, outputs)


def create_pretraining_data(input_files, output_files, options, beam_pipeline_options):
    """The pool's create_pretraining_data as a Beam pipeline run with `beam_pipeline_options`
    (the --beam_pipeline_options text); returns the summary dict (also written beside the
    first output)."""
    beam_options = runtime.pipeline_options(beam_pipeline_options)
    files, layout, fingerprint = _prepare(input_files, output_files, options, beam_options)
    done = _already_complete(layout, fingerprint)
    if done:
        logger.info("output is already complete for these arguments (%s); nothing to do",
                    layout.summary)
        return done
    shards = inputs.plan_shards(files, max(1, int(options.shard_size_mb * 1e6)),
                                runtime.open_read, runtime.size)
    _start(layout, fingerprint)
    runner = runtime.describe(beam_options)
    logger.info("%d shards of up to %.1f MB, %.1f MB of text, on %s; writing to %s",
                len(shards), options.shard_size_mb, sum(s.num_bytes for s in shards) / 1e6,
                runner, ",".join(layout.outputs))
    with open(options.vocab_file, "rb") as f:
        vocab = f.read()
    started = time.monotonic()
    result = runtime.run(lambda p: _build(p, shards, options, vocab, layout), beam_options)
    return _finish(layout, fingerprint, options, files, shards, {
        "runner": runner, "num_workers": runtime.num_workers(beam_options),
        "shards_reused": runtime.counter(result, "shards_reused"),
        "seconds": time.monotonic() - started})


def _finish(layout, fingerprint, options, files, shards, run):
    """Writes the summary from the pipeline's totals and removes the work files."""
    totals = read_json(layout.totals)
    stats = stats_lib.Stats.from_json(totals["stats"])
    if stats.documents == 0:
        runtime.delete([layout.work_dir, *layout.outputs])
        raise ValueError(f"no text found in the input files ({len(files)} files, "
                         f"{stats.input_bytes} bytes): every line was blank or had no tokens")
    job.log_examples(totals["examples"])
    summary = stats_lib.summary(stats, run.pop("seconds"))
    summary.update({"fingerprint": fingerprint, "output_files": layout.outputs,
                    "output_records": totals["output_records"],
                    "output_bytes": [runtime.size(o) for o in layout.outputs],
                    "options": dataclasses.asdict(options), "input_files": files,
                    "shards": len(shards), **run})
    runtime.write_bytes(layout.summary, (json.dumps(summary, indent=2) + "\n").encode())
    runtime.delete([layout.work_dir])
    job.log_summary(summary, layout.summary)
    return summary
