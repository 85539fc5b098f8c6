"""The minimum metadata-parser version of a MediaPipe metadata buffer, in Python.

mediapipe 1.2.x's metadata writer imports it from a compiled module
(mediapipe.tasks.cc.metadata.python._pywrap_metadata_version) that its PyPI wheels no longer
ship. It is only the largest schema version among the metadata fields in use, which this
module computes from the generated flatbuffer code; install() registers it under the missing
name when the compiled module is absent."""

import sys
import types

_MODULE = "mediapipe.tasks.cc.metadata.python._pywrap_metadata_version"
# Schema version that introduced each field (mediapipe/tasks/metadata/metadata_schema.fbs).
_SINCE = {"vocabulary": (1, 0, 1), "process_units": (1, 1, 0), "bert": (1, 1, 0),
          "sentencepiece": (1, 1, 0), "tensor_groups": (1, 2, 0), "regex": (1, 2, 1),
          "audio": (1, 3, 0), "scann": (1, 4, 0), "file_version": (1, 4, 1),
          "custom": (1, 5, 0)}


def minimum_parser_version(buffer):
    """"major.minor.patch" of the oldest parser that reads the ModelMetadata `buffer`."""
    from mediapipe.tasks.metadata import metadata_schema_py_generated as fb
    units = {fb.ProcessUnitOptions.BertTokenizerOptions: "bert",
             fb.ProcessUnitOptions.SentencePieceTokenizerOptions: "sentencepiece",
             fb.ProcessUnitOptions.RegexTokenizerOptions: "regex"}
    seen = {(1, 0, 0)}

    def files(count, get):
        for i in range(count):
            f = get(i)
            if f.Type() == fb.AssociatedFileType.VOCABULARY:
                seen.add(_SINCE["vocabulary"])
            if f.Type() == getattr(fb.AssociatedFileType, "SCANN_INDEX_FILE", -1):
                seen.add(_SINCE["scann"])
            if getattr(f, "Version", lambda: None)() is not None:
                seen.add(_SINCE["file_version"])

    def process_units(count, get):
        seen.update(_SINCE[units[get(i).OptionsType()]] for i in range(count)
                    if get(i).OptionsType() in units)

    def tensor(t):
        files(t.AssociatedFilesLength(), t.AssociatedFiles)
        process_units(t.ProcessUnitsLength(), t.ProcessUnits)
        content = t.Content()
        if content is not None and \
                content.ContentPropertiesType() == fb.ContentProperties.AudioProperties:
            seen.add(_SINCE["audio"])

    model = fb.ModelMetadata.GetRootAsModelMetadata(bytearray(buffer), 0)
    for s in range(model.SubgraphMetadataLength()):
        graph = model.SubgraphMetadata(s)
        for i in range(graph.InputTensorMetadataLength()):
            tensor(graph.InputTensorMetadata(i))
        for i in range(graph.OutputTensorMetadataLength()):
            tensor(graph.OutputTensorMetadata(i))
        files(graph.AssociatedFilesLength(), graph.AssociatedFiles)
        for is_none, count, get in ((graph.InputProcessUnitsIsNone,
                                     graph.InputProcessUnitsLength, graph.InputProcessUnits),
                                    (graph.OutputProcessUnitsIsNone,
                                     graph.OutputProcessUnitsLength, graph.OutputProcessUnits)):
            if not is_none():
                seen.add(_SINCE["process_units"])
                process_units(count(), get)
        if not graph.InputTensorGroupsIsNone() or not graph.OutputTensorGroupsIsNone():
            seen.add(_SINCE["tensor_groups"])
        if not graph.CustomMetadataIsNone():
            seen.add(_SINCE["custom"])
    files(model.AssociatedFilesLength(), model.AssociatedFiles)
    return ".".join(map(str, max(seen)))


def install():
    """Registers this computation under the compiled module's name unless that imports."""
    try:
        __import__(_MODULE)
        return
    except ImportError:
        pass
    parts = _MODULE.split(".")
    for i in range(3, len(parts)):
        package = ".".join(parts[:i])
        if package not in sys.modules:
            sys.modules[package] = types.ModuleType(package)
            sys.modules[package].__path__ = []
    module = types.ModuleType(_MODULE)
    module.GetMinimumMetadataParserVersion = minimum_parser_version
    sys.modules[_MODULE] = module
