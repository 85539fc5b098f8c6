"""Dependencies point down: no module of bert_tf (nor a root runner) imports a module of a layer
above its own, function-local imports included. The layers, top to bottom:

  runners     root *.py, bert_tf/{predict,flags,flag_reference,google_research_flags,cli,
              convert,plot_metrics,bench_api,processes}.py, bert_tf/quickstart/
  jobs        bert_tf/jobs/ (the fine-tuning driver and tasks, every runner's job), bert_tf/beam/
              (the Apache Beam pipelines of create_pretraining_data and predict)
  serving     bert_tf/serving/, bert_tf/prediction/
  training    bert_tf/training/, bert_tf/objectives/
  parts       bert_tf/{model,data,tokenization,checkpoints,metrics}/, bert_tf/{plots,contract}.py
  base        bert_tf/{config,names,fileio,options,kinds,cpu_features,_lazy}.py,
              bert_tf/__init__.py

Modules of one layer may import each other. bert_tf.kinds names pieces of every layer as
strings, imported on first use: that is not an import statement and is not checked here.
"""

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
LAYERS = ("base", "parts", "training", "serving", "jobs", "runners")
_TOP = {"predict": "runners", "flags": "runners", "flag_reference": "runners", "cli": "runners",
        "google_research_flags": "runners",
        "convert": "runners", "plot_metrics": "runners", "bench_api": "runners",
        "quickstart": "runners", "processes": "runners", "jobs": "jobs", "beam": "jobs",
        "serving": "serving", "prediction": "serving",
        "training": "training", "objectives": "training", "model": "parts", "data": "parts",
        "tokenization": "parts", "checkpoints": "parts", "metrics": "parts", "plots": "parts", "contract": "parts",
        "config": "base", "names": "base", "fileio": "base", "options": "base", "kinds": "base",
        "cpu_features": "base", "_lazy": "base", "__init__": "base"}

def layer_of(module):
    """The layer of dotted `module` (a bert_tf module or a root runner), None for others."""
    parts = module.split(".")
    if parts[0] != "bert_tf":
        return "runners" if (ROOT / f"{parts[0]}.py").exists() else None
    if len(parts) == 1:
        return "base"
    if parts[1] not in _TOP:
        raise AssertionError(f"bert_tf.{parts[1]}: no layer for it in tests/test_layers.py")
    return _TOP[parts[1]]


def module_name(path):
    relative = path.relative_to(ROOT).with_suffix("")
    return ".".join(relative.parts)


def sources():
    yield from sorted(ROOT.glob("*.py"))
    yield from sorted((ROOT / "bert_tf").rglob("*.py"))


def imported(tree, module):
    """(line, dotted name) of every module `tree` imports, at any depth."""
    package = module.rsplit(".", 1)[0] if not module.endswith("__init__") else module
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                path = ROOT / candidate.replace(".", "/")
                is_module = path.with_suffix(".py").exists() or path.is_dir()
                yield node.lineno, candidate if is_module else base


def upward_imports():
    """'file:line: <layer> imports <module> (<layer>)' for every import that climbs."""
    found = []
    for path in sources():
        module = module_name(path)
        own = layer_of(module)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for line, target in imported(tree, module):
            theirs = layer_of(target)
            if theirs is None or LAYERS.index(theirs) <= LAYERS.index(own):
                continue
            found.append(f"{path.relative_to(ROOT)}:{line}: {own} layer imports {target} ({theirs} layer)")
    return found


def test_every_module_has_a_layer():
    for path in sources():
        assert layer_of(module_name(path)) in LAYERS, path


def test_no_module_imports_a_layer_above_its_own():
    found = upward_imports()
    assert not found, "imports that climb a layer:\n" + "\n".join(found)
