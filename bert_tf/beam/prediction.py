"""python -m bert_tf.predict --beam_pipeline_options=...: batch prediction as a Beam pipeline.

  chunks of --input_file -> count lines and rows per chunk -> parse rows (line numbers and
  indices from the counts before) -> spread -> RunInference (keyed rows, model_handler) ->
  per chunk, JSON lines sorted by index -> one --output_file, chunk after chunk

The output holds the JSON lines bert_tf.predict writes without Beam, in input order. A row the
model cannot take (not UTF-8, bad JSON, wrong number of columns, a missing field) is not
predicted: it goes to <output_file>.refused.jsonl as {"file", "line", "error"}, and the run
checks that rows read = rows predicted + rows refused.
"""

import json
import logging
import time

from bert_tf import names
from bert_tf.beam import runtime, text_chunks
from bert_tf.jobs import predict as predict_job
from bert_tf.prediction import loading
from bert_tf.prediction.inputs import InputError

logger = logging.getLogger("bert_tf")

REFUSED = "refused"
REFUSED_SUFFIX = ".refused.jsonl"


class _Layout:
    def __init__(self, output):
        folder, name = runtime.split(output)
        self.output, self.refused = output, output + REFUSED_SUFFIX
        self.work_dir = runtime.join(folder, f".{name}.beam-work")

    def part(self, kind, chunk):
        return runtime.join(self.work_dir, f"{kind}-{chunk:06d}.jsonl")


def _counter(name):
    from apache_beam.metrics import Metrics
    return Metrics.counter("bert_tf", name)


def _refusal_line(path, line, error):
    return json.dumps({"file": path, "line": line, "error": error}, ensure_ascii=False)


# --------------------------------------------------------------------------- steps
def _parse(chunk, text_file, counts):
    """((chunk, index), Row) for each row of the chunk; refused lines tagged REFUSED."""
    beam = runtime.import_beam()
    read = 0
    for read, item in enumerate(text_chunks.parse(chunk, text_file, counts), start=1):
        if isinstance(item, text_chunks.Refusal):
            yield beam.pvalue.TaggedOutput(REFUSED, (chunk, (item.line, _refusal_line(
                item.file, item.line, item.error))))
        else:
            index, row = item
            yield (chunk, index), row
    _counter("rows_read").inc(read)


def _outcome(keyed):
    """(chunk, (index, JSON line)) of a predicted row; a refused one tagged REFUSED."""
    beam = runtime.import_beam()
    (chunk, index), result = keyed
    outcome, row = result.inference, result.example
    if "refused" in outcome:
        yield beam.pvalue.TaggedOutput(REFUSED, (chunk, (row.line, _refusal_line(
            row.path, row.line, outcome["refused"]))))
    else:
        yield chunk, (index, json.dumps(outcome["result"], ensure_ascii=False))


def _write_part(grouped, layout, kind):
    """Writes a chunk's lines, in order, to its part file; returns (kind, chunk, path)."""
    chunk, items = grouped
    lines = [line for _, line in sorted(items)]
    runtime.write_bytes(layout.part(kind, chunk), "".join(f"{x}\n" for x in lines).encode())
    _counter("rows_predicted" if kind == "out" else "rows_refused").inc(len(lines))
    return kind, chunk, layout.part(kind, chunk)


def _plan(parts, layout):
    """(target file, its parts in chunk order, or None: no refused rows, remove a stale one)."""
    for kind, target in (("out", layout.output), (REFUSED, layout.refused)):
        paths = [path for k, _, path in sorted(parts) if k == kind]
        yield target, (paths if paths or kind == "out" else None)


def _write_target(item):
    target, parts = item
    if parts is None:
        runtime.delete([target])
    else:
        runtime.concatenate(target, parts)


def _build(pipeline, text_file, handler, layout):
    beam = runtime.import_beam()
    base = runtime.import_beam_module("apache_beam.ml.inference.base")
    chunks = (pipeline | "Chunks" >> beam.Create(range(text_file.num_chunks))
              | "SpreadChunks" >> beam.Reshuffle())
    counts = chunks | "Count" >> beam.Map(text_chunks.count, text_file)
    parsed = chunks | "Parse" >> beam.FlatMap(
        _parse, text_file, beam.pvalue.AsDict(counts)).with_outputs(REFUSED, main="rows")
    predicted = (parsed.rows | "SpreadRows" >> beam.Reshuffle()
                 | "Predict" >> base.RunInference(base.KeyedModelHandler(handler))
                 | "Outcome" >> beam.FlatMap(_outcome).with_outputs(REFUSED, main="results"))
    results = (predicted.results | "GroupResults" >> beam.GroupByKey()
               | "WriteResults" >> beam.Map(_write_part, layout, "out"))
    refused = ((parsed[REFUSED], predicted[REFUSED]) | "AllRefused" >> beam.Flatten()
               | "GroupRefused" >> beam.GroupByKey()
               | "WriteRefused" >> beam.Map(_write_part, layout, REFUSED))
    _ = ((results, refused) | "AllParts" >> beam.Flatten()
         | "ListParts" >> beam.combiners.ToList() | "Plan" >> beam.FlatMap(_plan, layout)
         | "SpreadTargets" >> beam.Reshuffle() | "Write" >> beam.Map(_write_target))


# --------------------------------------------------------------------------- the launcher
def _saved_model(opts):
    """The SavedModel version folder of --model, checked as bert_tf.predict checks it."""
    version = loading.saved_model_version(opts.model)
    if version is None:
        raise InputError(f"--model {opts.model}: with --beam_pipeline_options give a SavedModel "
                         f"exported by bert_tf (export_savedmodel.py); a checkpoint predicts "
                         f"without Beam")
    given = opts.checkpoint.given()
    if given:
        raise InputError(f"{', '.join(given)}: for checkpoints only; the SavedModel {version} "
                         f"fixed {'it' if len(given) == 1 else 'them'} at export")
    info = json.loads(runtime.read_bytes(runtime.join(
        runtime.join(version, names.ASSETS_EXTRA), names.EXPORT_INFO)))
    loading.check_predictable(info.get("task"), f"--model {version}")
    if opts.doc_stride is not None:
        stub = loading.Predictor(info, None, {}, f"SavedModel {version}")
        predict_job.check_saved_model_stride(stub, version)
    return runtime.absolute(version)


def _prepare(opts, beam_options):
    """(SavedModel folder, TextFile, _Layout) after every check a worker would fail."""
    opts.validate()
    if any((opts.text, opts.text_pair, opts.question, opts.context, opts.choices)):
        raise InputError("--beam_pipeline_options reads rows from --input_file, not from the "
                         "text flags")
    if not opts.input_file or not opts.output_file:
        raise InputError("--beam_pipeline_options reads --input_file and writes --output_file: "
                         "give both")
    version = _saved_model(opts)
    source, output = runtime.absolute(opts.input_file), runtime.absolute(opts.output_file)
    if not runtime.exists(source):
        raise InputError(f"--input_file {opts.input_file} does not exist")
    runtime.check_visible(beam_options, [("model", version), ("input_file", source),
                                         ("output_file", output)])
    runtime.check_writable(runtime.split(output)[0], "output_file", output)
    return version, text_chunks.describe(source), _Layout(output)


def predict_on_beam(opts):
    """Runs the pipeline for PredictOptions `opts` (opts.beam_pipeline_options set); returns
    {"rows", "predicted", "refused", "seconds"}."""
    from bert_tf.beam.model_handler import SavedModelHandler
    beam_options = runtime.pipeline_options(opts.beam_pipeline_options)
    version, text_file, layout = _prepare(opts, beam_options)
    handler = SavedModelHandler(version, opts, opts.batch_size, opts.batch_size)
    logger.info("predicting %s (%d chunk(s)) with SavedModel %s on %s", text_file.path,
                text_file.num_chunks, version, runtime.describe(beam_options))
    runtime.delete([layout.work_dir])
    started = time.perf_counter()
    result = runtime.run(lambda p: _build(p, text_file, handler, layout), beam_options)
    runtime.delete([layout.work_dir])
    counts = {name: runtime.counter(result, f"rows_{name}")
              for name in ("read", "predicted", "refused")}
    if counts["read"] != counts["predicted"] + counts["refused"]:
        raise RuntimeError(f"rows read {counts['read']} != predicted {counts['predicted']} + "
                           f"refused {counts['refused']}")
    logger.info("wrote %d prediction(s) to %s%s", counts["predicted"], layout.output,
                f"; {counts['refused']} row(s) refused, listed in {layout.refused}"
                if counts["refused"] else "")
    return {"rows": counts["read"], "predicted": counts["predicted"],
            "refused": counts["refused"], "seconds": time.perf_counter() - started}
