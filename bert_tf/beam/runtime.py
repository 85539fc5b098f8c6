"""What both Beam jobs share: importing Beam, reading --beam_pipeline_options, the checks made
before a pipeline starts, and files through Beam's file systems.

--beam_pipeline_options takes the format of TensorFlow Datasets' `tfds build
--beam_pipeline_options`: comma-separated key=value pairs of Beam's pipeline options, each
becoming the command-line option --key=value (a key alone: --key, for a switch), e.g.

  runner=FnApiRunner,direct_num_workers=2,direct_running_mode=multi_processing
  runner=DataflowRunner,project=my-project,region=europe-west4,temp_location=gs://b/tmp,
      sdk_container_image=europe-docker.pkg.dev/my-project/bert/beam:1

A value cannot hold a comma; repeat the key instead (experiments=a,experiments=b). Without a
runner the pipeline runs on the FnApiRunner of this machine (Beam's own default, the
DirectRunner, first tries the Prism runner, which downloads a binary when the pipeline starts).
"""

import argparse
import contextlib
import io
import logging
import os
import re
import uuid

logger = logging.getLogger("bert_tf")

FLAG = "--beam_pipeline_options"
INSTALL = "pip install 'bert_tf[beam]'"
DEFAULT_RUNNER = "FnApiRunner"
EXAMPLE = "runner=FnApiRunner,direct_num_workers=2,direct_running_mode=multi_processing"
# Runners whose workers never see a file of the launcher's machine.
_REMOTE_RUNNERS = ("dataflowrunner", "testdataflowrunner")
_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


class BeamSetupError(ValueError):
    """Beam is missing, --beam_pipeline_options is unusable, or a path is one the workers
    cannot use; the message says what to do."""


def import_beam():
    """The apache_beam module, or BeamSetupError saying how to install it."""
    try:
        import apache_beam
    except ImportError as error:
        raise BeamSetupError(f"{FLAG} needs Apache Beam, which cannot be imported ({error}): "
                             f"{INSTALL}") from None
    return apache_beam


def import_beam_module(name):
    """An apache_beam submodule, or BeamSetupError saying how to install Beam."""
    import importlib
    import_beam()
    return importlib.import_module(name)


# --------------------------------------------------------------------------- the flag
def option_flags(text):
    """The Beam command-line options of a --beam_pipeline_options value, with a runner."""
    flags = []
    for item in (part.strip() for part in str(text).split(",")):
        if not item:
            continue
        key, has_value, value = item.partition("=")
        key = key.strip().lstrip("-")
        if not _KEY.match(key):
            raise BeamSetupError(f"{FLAG}: {item!r} is not key=value (for example {EXAMPLE})")
        flags.append(f"--{key}={value.strip()}" if has_value else f"--{key}")
    if not any(f.startswith("--runner=") for f in flags):
        flags.insert(0, f"--runner={DEFAULT_RUNNER}")
    return flags


def pipeline_options(text):
    """Beam's PipelineOptions for a --beam_pipeline_options value, checked: every key is one of
    Beam's options, values parse, the runner is one Beam knows."""
    import_beam()
    from apache_beam.options.pipeline_options import PipelineOptions
    flags = option_flags(text)
    unknown = _unknown_options(flags)
    if unknown:
        raise BeamSetupError(f"{FLAG}: unknown option {unknown[0].split('=')[0].lstrip('-')!r} "
                             f"(Beam's pipeline options, for example {EXAMPLE})")
    options = PipelineOptions(flags)
    runner_name(options)
    return options


def _unknown_options(flags):
    """The flags no Beam options class defines; BeamSetupError for a value that does not
    parse."""
    from apache_beam.options import pipeline_options as po
    make_parser = getattr(po, "_BeamArgumentParser", argparse.ArgumentParser)
    parser = make_parser(allow_abbrev=False)
    classes = {}
    for cls in po.PipelineOptions.__subclasses__():
        classes.setdefault(str(cls), cls)
    for cls in classes.values():
        cls._add_argparse_args(parser)  # how Beam builds its own parser
    errors = io.StringIO()
    try:
        with contextlib.redirect_stderr(errors):
            _, unknown = parser.parse_known_args(flags)
    except SystemExit:
        said = [line for line in errors.getvalue().splitlines() if line.strip()]
        reason = said[-1].split("error: ", 1)[-1] if said else "cannot be parsed"
        raise BeamSetupError(f"{FLAG}: {reason} (for example {EXAMPLE})") from None
    return [u for u in unknown if u.startswith("--")]


def runner_name(options):
    """The runner's class name as Beam spells it (FnApiRunner, DataflowRunner, ...), a full
    class path as given, or BeamSetupError for a name Beam does not know."""
    from apache_beam.options.pipeline_options import StandardOptions
    given = options.view_as(StandardOptions).runner or DEFAULT_RUNNER
    if not isinstance(given, str) or "." in given:
        return given
    known = {name.lower(): name for name in StandardOptions.KNOWN_RUNNER_NAMES}
    name = known.get(given.lower()) or known.get(given.lower() + "runner")
    if name is None:
        raise BeamSetupError(
            f"{FLAG}: unknown runner {given!r}: use FnApiRunner on this machine ({EXAMPLE}), "
            f"DataflowRunner, FlinkRunner, SparkRunner or PortableRunner (docs/scale.md)")
    return name


def num_workers(options):
    """direct_num_workers of a local runner (0: one per core), else None."""
    from apache_beam.options.pipeline_options import DirectOptions, StandardOptions
    if runner_name(options) not in StandardOptions.LOCAL_RUNNERS:
        return None
    return options.view_as(DirectOptions).direct_num_workers


def describe(options):
    """"FnApiRunner, 2 workers, multi_processing" for the log."""
    from apache_beam.options.pipeline_options import DirectOptions
    name = runner_name(options)
    workers = num_workers(options)
    if workers is None:
        return name
    mode = options.view_as(DirectOptions).direct_running_mode
    return f"{name}, {workers or os.cpu_count()} worker(s), {mode}"


# --------------------------------------------------------------------------- checks
def check_visible(options, paths):
    """paths: [(flag, path)]. DataflowRunner's workers see no file of this machine, so a local
    path is refused there; on a cluster (Flink, Spark, a portable job server) a local path
    must be on a mount every worker shares, which is said in the log."""
    from apache_beam.options.pipeline_options import StandardOptions
    runner = runner_name(options)
    if runner in StandardOptions.LOCAL_RUNNERS:
        return
    for flag, path in paths:
        if is_url(path):
            continue
        if str(runner).lower() in _REMOTE_RUNNERS:
            raise BeamSetupError(f"--{flag} {path} is on this machine's disk, which "
                                 f"{runner}'s workers cannot see: give a gs:// path "
                                 f"(docs/scale.md)")
        logger.warning("--%s %s is a local path: every %s worker must see it at that path (a "
                       "shared mount), else give a URL such as gs://, s3:// or hdfs://",
                       flag, path, runner)


def check_writable(folder, flag, path):
    """Creates `folder` (and, through it, what the workers will write there) and a probe file
    in it; BeamSetupError when that fails."""
    probe = join(folder, f".probe-{uuid.uuid4().hex}")
    try:
        with create(probe) as f:
            f.write(b"")
        delete([probe])
    except (OSError, ValueError) as error:  # BeamIOError is an OSError; ValueError: scheme
        raise BeamSetupError(
            f"--{flag} {path}: cannot write to {folder} ({first_line(error)}): give a path "
            f"that this machine and every worker can write (a folder of your own, gs://, s3://, "
            f"hdfs://)") from None


def first_line(error):
    text = str(error).strip().splitlines()
    line = text[0] if text else type(error).__name__
    return line if len(line) <= 200 else line[:197] + "..."


# --------------------------------------------------------------------------- files
def is_url(path):
    return "://" in str(path)


def absolute(path):
    """A URL as it is, a local path made absolute (workers may start in another folder)."""
    path = os.fspath(path)
    return path if is_url(path) else os.path.abspath(path)


def _filesystems():
    from apache_beam.io.filesystems import FileSystems
    return FileSystems


def _uncompressed():
    from apache_beam.io.filesystem import CompressionTypes
    return CompressionTypes.UNCOMPRESSED


def join(folder, name):
    return _filesystems().join(folder, name)


def split(path):
    """(folder, name)."""
    return _filesystems().split(path)


def open_read(path):
    """A seekable binary reader of `path` (local or URL)."""
    return _filesystems().open(path, compression_type=_uncompressed())


def create(path):
    """A binary writer of `path` (its folder is created for local paths)."""
    return _filesystems().create(path, compression_type=_uncompressed())


def size(path):
    if not is_url(path):
        return os.path.getsize(path)
    return _filesystems().match([path])[0].metadata_list[0].size_in_bytes


def signature(path):
    """(size in bytes, last modification time): what decides whether earlier output is still
    valid."""
    metadata = _filesystems().match([path])[0].metadata_list[0]
    return metadata.size_in_bytes, metadata.last_updated_in_seconds


def rename(source, destination):
    _filesystems().rename([source], [destination])


def exists(path):
    return _filesystems().exists(path)


def read_bytes(path):
    with open_read(path) as f:
        return f.read()


def list_files(pattern):
    """{path: size in bytes} of the files matching a glob (none: {})."""
    found = _filesystems().match([pattern])[0].metadata_list
    return {m.path: m.size_in_bytes for m in found}


def delete(paths):
    """Deletes files or folders (recursively); missing ones are fine."""
    present = [p for p in paths if exists(p)]
    if present:
        _filesystems().delete(present)


def write_atomically(path, write):
    """write(stream) into a temporary file beside `path`, then renamed onto it: a reader sees
    the old file or the whole new one, never a part."""
    folder, name = split(path)
    temporary = join(folder, f".{name}.tmp-{uuid.uuid4().hex}")
    try:
        with create(temporary) as stream:
            result = write(stream)
        rename(temporary, path)
    except BaseException:
        with contextlib.suppress(Exception):
            delete([temporary])
        raise
    return result


def concatenate(path, parts):
    """Writes `path` (atomically) as the files `parts` one after the other."""
    def copy(stream):
        for part in parts:
            with open_read(part) as source:
                for block in iter(lambda: source.read(1 << 22), b""):
                    stream.write(block)

    write_atomically(path, copy)


def write_bytes(path, data):
    write_atomically(path, lambda stream: stream.write(data))


# --------------------------------------------------------------------------- running
class _WorkerNotice(logging.Filter):
    """Drops what the FnApiRunner's local workers send that says nothing to a user: their INFO
    lines, the notice that they have no semi-persistent directory (nothing is registered
    there) and that they cannot measure their memory."""

    _NOISE = ("semi_persistent_directory", "Resource module is not available")

    def filter(self, record):
        message = record.getMessage()
        return record.levelno > logging.INFO and not any(n in message for n in self._NOISE)


def run(pipeline_builder, options):
    """Builds the pipeline with pipeline_builder(pipeline), runs it to the end and returns its
    PipelineResult. Worker processes this machine starts import bert_tf from where this
    process did."""
    beam = import_beam()
    service = logging.getLogger("apache_beam.runners.portability.local_job_service")
    notice = _WorkerNotice()
    service.addFilter(notice)
    _export_import_path()
    try:
        pipeline = beam.Pipeline(options=options)
        pipeline_builder(pipeline)
        result = pipeline.run()
        result.wait_until_finish()
        return result
    finally:
        service.removeFilter(notice)


def _export_import_path():
    """Puts the folder holding bert_tf on PYTHONPATH (the local runner's workers are
    subprocesses started with this environment)."""
    import bert_tf
    root = os.path.dirname(os.path.dirname(os.path.abspath(bert_tf.__file__)))
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if root not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([root, *paths])


def counter(result, name):
    """The committed value of the bert_tf counter `name` in a PipelineResult (0 if none)."""
    from apache_beam.metrics.metric import MetricsFilter
    found = result.metrics().query(MetricsFilter().with_namespace("bert_tf").with_name(name))
    return sum(c.committed or 0 for c in found["counters"])
