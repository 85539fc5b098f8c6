"""create_pretraining_data as a resumable, parallel, streaming job.

The corpus is cut into shards of about `shard_size_mb` of text at document boundaries
(inputs.plan_shards). Worker processes turn shards into part files (shard_worker); the main
process appends them, in shard order, to the output files, dealing records round-robin over the
outputs exactly as the original does, and records its progress after every shard.

Approximations of the original, which held the whole corpus in memory (documented for users):
* The instance shuffle is global within a shard, not over the corpus: output files hold shard 0's
  instances, then shard 1's, ... Readers should interleave several files and shuffle (as
  make_pretraining_dataset does); writing several output files helps.
* The random "next" document of a NotNext pair is drawn from the same shard, not from the whole
  corpus. With shards of a few MB (hundreds of documents) this changes nothing measurable; a shard
  holding a single document has to draw from that document (counted in the summary).
Memory is bounded by a shard (times the number of workers), not by the corpus. The output depends
on the seed, the shard size and the inputs, not on the number of workers.

Files beside output file OUT (for the first output): OUT.summary.json when done; while running,
.OUT.work/ (progress + part files) and .<output>.partial for each output. A rerun with the same
arguments resumes from the last completed shard, or does nothing if the summary says the output
is complete; a rerun with other arguments starts over.
"""

import collections
import dataclasses
import functools
import hashlib
import json
import logging
import multiprocessing
import os
import shutil
import sys
import time

from bert_tf.cpu_features import usable_cores
from bert_tf.data.pretraining import inputs, shard_worker, stats as stats_lib
from bert_tf.fileio import atomic_write_text

logger = logging.getLogger(__name__)

FORMAT_VERSION = 1
SUMMARY_SUFFIX = ".summary.json"


def summary_path(output_files):
    return output_files[0] + SUMMARY_SUFFIX


def split_names(value):
    items = value.split(",") if isinstance(value, str) else list(value)
    return [os.fspath(v).strip() for v in items if os.fspath(v).strip()]


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _fingerprint(options, files, outputs):
    record = {"format": FORMAT_VERSION, "options": dataclasses.asdict(options),
              "vocab_sha256": _sha256(options.vocab_file),
              "inputs": [[f, *inputs.file_signature(f)] for f in files],
              "outputs": [os.path.abspath(o) for o in outputs]}
    return hashlib.sha256(json.dumps(record, sort_keys=True).encode()).hexdigest()


def _read_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


class _Layout:
    """Where a job keeps its outputs, partial outputs and work files."""

    def __init__(self, outputs):
        self.outputs = outputs
        first = os.path.abspath(outputs[0])
        self.work_dir = os.path.join(os.path.dirname(first), f".{os.path.basename(first)}.work")
        self.state = os.path.join(self.work_dir, "state.json")
        self.summary = summary_path(outputs)
        self.partials = [os.path.join(os.path.dirname(os.path.abspath(o)),
                                      f".{os.path.basename(o)}.partial") for o in outputs]

    def parts(self, shard_index):
        return [os.path.join(self.work_dir, f"part-{shard_index:06d}-{j:04d}.tfrecord")
                for j in range(len(self.outputs))]

    def part_marker(self, shard_index):
        return os.path.join(self.work_dir, f"part-{shard_index:06d}.json")

    def remove_parts(self, shard_index):
        for path in self.parts(shard_index) + [self.part_marker(shard_index)]:
            if os.path.exists(path):
                os.remove(path)


_processor = None  # the ShardProcessor of a worker process


@functools.lru_cache(maxsize=4)
def _tokenizer(vocab_file, signature, do_lower_case):
    """One tokenizer per vocabulary file version, kept so its word cache stays warm.

    The Python path with its word cache beats the in-graph tokenizer here: after the first MBs
    almost every word is cached (9 MB/s per core measured, in-graph about 10), and building the
    graph costs about 7 s of CPU in every worker process."""
    del signature  # part of the cache key only
    from bert_tf import tokenization
    return tokenization.FullTokenizer(vocab_file, do_lower_case, graph_min_batch=None)


def _init_worker(options, num_outputs):
    global _processor
    tokenizer = _tokenizer(options.vocab_file, inputs.file_signature(options.vocab_file),
                           options.do_lower_case)
    _processor = shard_worker.ShardProcessor(options, tokenizer, num_outputs)


def _run_shard(shard, part_paths, marker):
    shard_stats, counts, examples = _processor.process(shard, part_paths)
    atomic_write_text(marker, json.dumps({"stats": shard_stats.to_json(), "counts": counts,
                                          "examples": examples}))
    return shard_stats, counts, examples


class _Progress:
    def __init__(self, total_bytes, num_shards):
        self.total_bytes, self.num_shards = total_bytes, num_shards
        self.start = time.monotonic()
        self.done_bytes = 0

    def report(self, shard_index, shard_bytes, totals):
        self.done_bytes += shard_bytes
        elapsed = max(time.monotonic() - self.start, 1e-9)
        rate = self.done_bytes / elapsed
        eta = (self.total_bytes - self.done_bytes) / rate if rate > 0 else float("inf")
        logger.info("shard %d/%d: %d documents, %d instances, %.1f/%.1f MB, %.2f MB/s, "
                    "%.0f instances/s, ETA %.0f s", shard_index + 1, self.num_shards,
                    totals.documents, totals.instances, self.done_bytes / 1e6,
                    self.total_bytes / 1e6, rate / 1e6, totals.instances / elapsed, eta)


def _check_outputs(outputs, files):
    remote = [o for o in outputs if "://" in o]
    if remote:
        raise ValueError(f"output_file must be on a local file system, got {remote[0]} (write "
                         "locally, then copy)")
    if len(set(map(os.path.abspath, outputs))) != len(outputs):
        raise ValueError(f"output_file names a file twice: {','.join(outputs)}")
    sources = {os.path.realpath(f) for f in files if "://" not in f}
    for output in outputs:
        if os.path.realpath(output) in sources:
            raise ValueError(f"output file {output} is also an input file")
        if os.path.isdir(output):
            raise ValueError(f"output file {output} is a directory")


def _already_complete(layout, fingerprint):
    """The summary of a finished run with the same fingerprint whose outputs are intact."""
    summary = _read_json(layout.summary)
    if not summary or summary.get("fingerprint") != fingerprint:
        return None
    sizes = summary.get("output_bytes", [])
    intact = len(sizes) == len(layout.outputs) and all(
        os.path.isfile(o) and os.path.getsize(o) == s for o, s in zip(layout.outputs, sizes))
    return summary if intact else None


@dataclasses.dataclass
class _Written:
    """What has been appended to the partial outputs so far (the resumable state)."""

    shards_done: int
    stats: stats_lib.Stats
    output_bytes: list
    output_records: list

    def to_json(self, fingerprint):
        return json.dumps({"fingerprint": fingerprint, "shards_done": self.shards_done,
                           "stats": self.stats.to_json(), "output_bytes": self.output_bytes,
                           "output_records": self.output_records})


def _resume_point(layout, fingerprint):
    """_Written of an interrupted run with the same fingerprint, or None."""
    state = _read_json(layout.state)
    if not state or state.get("fingerprint") != fingerprint:
        return None
    for partial, size in zip(layout.partials, state["output_bytes"]):
        if not os.path.isfile(partial) or os.path.getsize(partial) < size:
            return None
    return _Written(state["shards_done"], stats_lib.Stats.from_json(state["stats"]),
                    state["output_bytes"], state["output_records"])


def _remove_work_files(layout):
    shutil.rmtree(layout.work_dir, ignore_errors=True)
    for partial in layout.partials:
        if os.path.exists(partial):
            os.remove(partial)


def _start(layout, fingerprint, num_shards):
    """Truncates partial outputs to the last recorded shard, or creates empty ones."""
    written = _resume_point(layout, fingerprint)
    if written:
        for partial, size in zip(layout.partials, written.output_bytes):
            os.truncate(partial, size)
        logger.info("resuming after shard %d of %d (%d instances already written)",
                    written.shards_done, num_shards, written.stats.instances)
        return written
    _remove_work_files(layout)
    os.makedirs(layout.work_dir)
    for partial in layout.partials:
        os.makedirs(os.path.dirname(partial), exist_ok=True)
        open(partial, "wb").close()
    n = len(layout.outputs)
    return _Written(0, stats_lib.Stats(), [0] * n, [0] * n)


def _append(results, layout, fingerprint, written, progress):
    """Appends each shard's parts to the partial outputs, dealing records round-robin (record g
    of the run goes to output g % n), and records the progress after every shard."""
    n = len(layout.outputs)
    handles = [open(p, "r+b") for p in layout.partials]
    try:
        for h in handles:
            h.seek(0, os.SEEK_END)
        for shard, (shard_stats, counts, examples) in results:
            log_examples(examples)
            for j, part in enumerate(layout.parts(shard.index)):
                k = (written.stats.instances + j) % n
                with open(part, "rb") as src:
                    shutil.copyfileobj(src, handles[k], 1 << 22)
                written.output_records[k] += counts[j]
            for h in handles:
                h.flush()
            written.output_bytes = [h.tell() for h in handles]
            written.stats.add(shard_stats)
            written.shards_done = shard.index + 1
            atomic_write_text(layout.state, written.to_json(fingerprint))
            layout.remove_parts(shard.index)
            _log_invalid(shard_stats)
            progress.report(shard.index, shard.num_bytes, written.stats)
        for h in handles:
            os.fsync(h.fileno())
    finally:
        for h in handles:
            h.close()
        results.close()


def create_pretraining_data(input_files, output_files, options, num_workers=None):
    """Writes pre-training TFRecords for the text in `input_files` into `output_files`.

    input_files: comma-separated string or list of paths/globs; output_files: comma-separated
    string or list (records are dealt round-robin); options: PretrainingDataOptions;
    num_workers: processes (default: all available cores). Returns the summary dict (also
    written to <first output>.summary.json).
    """
    options.validate()
    files = inputs.resolve_input_files(input_files)
    outputs = split_names(output_files)
    if not outputs:
        raise ValueError("no output file given")
    _check_outputs(outputs, files)
    num_workers = num_workers or usable_cores()
    layout = _Layout(outputs)
    fingerprint = _fingerprint(options, files, outputs)

    logger.info("*** Reading from %d input files ***", len(files))
    for f in files:
        logger.info("  %s", f)
    done = _already_complete(layout, fingerprint)
    if done:
        logger.info("output is already complete for these arguments (%s); nothing to do",
                    layout.summary)
        logger.info("Wrote %d total instances", done["instances"])
        return done

    shards = inputs.plan_shards(files, max(1, int(options.shard_size_mb * 1e6)))
    total_bytes = sum(s.num_bytes for s in shards)
    written = _start(layout, fingerprint, len(shards))
    todo = shards[written.shards_done:]
    logger.info("%d shards of up to %.1f MB, %.1f MB of text, %d workers; writing to %s",
                len(shards), options.shard_size_mb, total_bytes / 1e6,
                num_workers if len(todo) > 1 else 1, ",".join(outputs))
    started = time.monotonic()
    _append(_ShardResults(todo, layout, options, len(outputs), num_workers), layout, fingerprint,
            written, _Progress(sum(s.num_bytes for s in todo), len(shards)))

    totals = written.stats
    if totals.documents == 0:
        _remove_work_files(layout)
        raise ValueError(f"no text found in the input files ({len(files)} files, "
                         f"{total_bytes} bytes): every line was blank or had no tokens")
    for partial, output in zip(layout.partials, outputs):
        os.replace(partial, output)
    summary = stats_lib.summary(totals, time.monotonic() - started)
    summary.update({"fingerprint": fingerprint, "output_files": outputs,
                    "output_records": written.output_records,
                    "output_bytes": written.output_bytes, "options": dataclasses.asdict(options),
                    "input_files": files, "shards": len(shards), "num_workers": num_workers})
    atomic_write_text(layout.summary, json.dumps(summary, indent=2) + "\n")
    shutil.rmtree(layout.work_dir, ignore_errors=True)
    log_summary(summary, layout.summary)
    return summary


class _ShardResults:
    """(shard, (Stats, counts)) in shard order, computed by a pool with at most 2 shards per
    worker in flight (or inline for one worker). Shards whose part files an earlier run completed
    are not recomputed."""

    def __init__(self, shards, layout, options, num_outputs, num_workers):
        self.shards, self.layout = shards, layout
        self.pool, self.window = None, 1
        if num_workers > 1 and len(shards) > 1:
            # fork is fast, but unsafe once this process has TensorFlow loaded.
            fork = "fork" in multiprocessing.get_all_start_methods() and (
                "tensorflow" not in sys.modules)
            context = multiprocessing.get_context("fork" if fork else "spawn")
            self.pool = context.Pool(num_workers, _init_worker, (options, num_outputs))
            self.window = 2 * num_workers
        else:
            _init_worker(options, num_outputs)

    def _args(self, shard):
        return shard, self.layout.parts(shard.index), self.layout.part_marker(shard.index)

    def _finished(self, shard):
        marker = _read_json(self.layout.part_marker(shard.index))
        if marker and all(os.path.isfile(p) for p in self.layout.parts(shard.index)):
            return (stats_lib.Stats.from_json(marker["stats"]), marker["counts"],
                    marker["examples"])
        return None

    def _start(self, shard):
        if self.pool is None or self._finished(shard) is not None:
            return None
        return self.pool.apply_async(_run_shard, self._args(shard))

    def _finish(self, shard, job):
        if job is not None:
            return shard, job.get()
        return shard, self._finished(shard) or _run_shard(*self._args(shard))

    def __iter__(self):
        pending = collections.deque()
        for shard in self.shards:
            pending.append((shard, self._start(shard)))
            if len(pending) >= self.window:
                yield self._finish(*pending.popleft())
        while pending:
            yield self._finish(*pending.popleft())

    def close(self):
        if self.pool is not None:
            self.pool.terminate()
            self.pool.join()


def log_examples(lines):
    for line in lines:
        if line.startswith("tokens: "):
            logger.info("*** Example ***")
        logger.info("%s", line)


def _log_invalid(shard_stats):
    if shard_stats.invalid_bytes:
        logger.warning("dropped %d bytes that are not UTF-8, at %s", shard_stats.invalid_bytes,
                       ", ".join(shard_stats.invalid_places) or "(see summary)")


def log_summary(summary, path):
    nsp = summary["next_sentence"]
    logger.info("*** Summary (also in %s) ***", path)
    logger.info("instances %d, tokens %d (%.1f per instance), masked fraction %.4f "
                "(mask %.3f / random %.3f / kept %.3f), random next %.4f",
                summary["instances"], summary["tokens"], summary["mean_tokens_per_instance"],
                summary["masked_fraction"], summary["masked_as_mask_fraction"],
                summary["masked_as_random_fraction"], summary["masked_as_kept_fraction"],
                nsp["random_next_fraction"])
    logger.info("length histogram: %s", summary["length_histogram"])
    if summary["empty_documents_dropped"] or summary["lines_without_tokens"]:
        logger.info("dropped %d empty documents and %d lines without tokens",
                    summary["empty_documents_dropped"], summary["lines_without_tokens"])
    if summary["single_document_shards"]:
        logger.warning("%d shard(s) held a single document, so their NotNext pairs take B from "
                       "that same document; give more documents (or a larger --shard_size_mb)",
                       summary["single_document_shards"])
    logger.info("Wrote %d total instances", summary["instances"])
