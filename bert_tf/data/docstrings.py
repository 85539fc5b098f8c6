"""Text that needs no download: the docstrings of the installed Python standard library (the
quickstart's pre-training corpus, and the default calibration text of int8 exports).

The stdlib's source files are parsed with `ast` (nothing is imported, so no module runs), in
sorted path order. Each module (its own docstring and those of its top-level functions) and each
class (its docstring and its methods') becomes one document; documents are written in
create_pretraining_data's format: one sentence per line, a blank line between documents.
Doctest examples, code blocks and lines without words are left out. The text depends only on
the Python version installed (the quickstart logs it).
"""

import ast
import dataclasses
import inspect
import os
import re
import sys
import sysconfig

from bert_tf import fileio

# Folders of the stdlib that are not documentation prose: tests, bundled wheels, build files.
SKIP_DIRS = {"test", "tests", "idle_test", "site-packages", "dist-packages", "__pycache__",
             "_bundled", "turtledemo", "__phello__"}
SKIP_DIR_PREFIXES = ("config-", "lib-dynload")
SKIP_FILES = {"antigravity.py", "this.py", "__hello__.py"}

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[`])")
_ABBREVIATION = re.compile(r"(?:\b(?:e\.g|i\.e|etc|vs|cf|Mr|Dr|No|approx)\.|\b[A-Za-z]\.)$")
_WORD = re.compile(r"[A-Za-z]{2,}")
_CODE_START = (">>>", "...", "$ ", "%")


@dataclasses.dataclass
class Document:
    """One module or class: where it comes from and its sentences."""
    module: str        # dotted module name, e.g. "email.message"
    name: str          # the module name, or "module.Class" for a class
    sentences: list

    @property
    def package(self):
        """Top-level package (or module) name: "email" for "email.message"."""
        return self.module.split(".", 1)[0]


def stdlib_dir():
    return sysconfig.get_paths()["stdlib"]


def stdlib_files(root=None):
    """(dotted module name, path) of the stdlib's .py files, sorted by path."""
    root = root or stdlib_dir()
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS
                         and not d.startswith(SKIP_DIR_PREFIXES) and not d.startswith("."))
        rel = os.path.relpath(folder, root)
        parts = [] if rel == "." else rel.split(os.sep)
        if parts and not os.path.exists(os.path.join(folder, "__init__.py")):
            dirs[:] = []          # not a package: nothing below is importable stdlib
            continue
        for name in sorted(files):
            if not name.endswith(".py") or name in SKIP_FILES:
                continue
            stem = name[:-3]
            module = ".".join(parts if stem == "__init__" else parts + [stem])
            if module:
                found.append((module, os.path.join(folder, name)))
    return sorted(found, key=lambda item: item[1])


def _prose_paragraphs(docstring):
    """Paragraphs of a docstring that read as prose, each joined into one line."""
    paragraphs, current = [], []
    for line in inspect.cleandoc(docstring).splitlines() + [""]:
        if not line.strip():
            if current:
                paragraphs.append(current)
            current = []
        else:
            current.append(line)
    out = []
    for lines in paragraphs:
        first = lines[0]
        if first.startswith((" ", "\t")) or first.lstrip().startswith(_CODE_START):
            continue      # an indented block or a doctest: code, not prose
        kept = []
        for line in lines:
            if line.lstrip().startswith(_CODE_START):
                break
            kept.append(line.strip())
        if kept:
            out.append(" ".join(kept))
    return out


def _is_sentence(text, min_words, max_chars):
    if len(text) > max_chars or len(_WORD.findall(text)) < min_words:
        return False
    letters = sum(c.isalpha() for c in text)
    return letters >= 0.6 * sum(not c.isspace() for c in text)


def split_sentences(docstring, min_words=3, max_chars=400):
    """The prose sentences of a docstring, whitespace-normalised.

    Paragraphs starting with code (doctest prompts, indented blocks) are dropped; sentences end
    at '.', '!' or '?' before a capital, digit, quote or bracket (not after "e.g." and other
    abbreviations); fragments with fewer than `min_words` words, longer than `max_chars` or
    mostly punctuation (tables, underlines) are dropped."""
    sentences = []
    for paragraph in _prose_paragraphs(docstring):
        paragraph = " ".join(paragraph.split())
        pieces, buffer = [], ""
        for piece in _SENTENCE_END.split(paragraph):
            buffer = f"{buffer} {piece}" if buffer else piece
            if not _ABBREVIATION.search(buffer):
                pieces.append(buffer)
                buffer = ""
        if buffer:
            pieces.append(buffer)
        sentences.extend(p for p in pieces if _is_sentence(p, min_words, max_chars))
    return sentences


def _docstring_sentences(node):
    doc = ast.get_docstring(node, clean=False)
    return split_sentences(doc) if doc else []


def module_documents(module, source):
    """The Documents of one module's source: the module (its docstring and top-level
    functions'), then each top-level class (its docstring and its methods')."""
    tree = ast.parse(source)
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    module_sentences = _docstring_sentences(tree)
    classes = []
    for node in tree.body:
        if isinstance(node, functions):
            module_sentences += _docstring_sentences(node)
        elif isinstance(node, ast.ClassDef):
            sentences = _docstring_sentences(node)
            for item in node.body:
                if isinstance(item, functions + (ast.ClassDef,)):
                    sentences += _docstring_sentences(item)
            if sentences:
                classes.append(Document(module, f"{module}.{node.name}", sentences))
    docs = [Document(module, module, module_sentences)] if module_sentences else []
    return docs + classes


def harvest(root=None, packages=None):
    """Documents of the stdlib under `root` (default: this interpreter's), in path order;
    `packages` limits them to those top-level packages/modules. Files that do not parse
    (none in a normal install) are skipped."""
    docs = []
    for module, path in stdlib_files(root):
        if packages is not None and module.split(".", 1)[0] not in packages:
            continue
        try:
            with open(path, encoding="utf-8") as f:
                source = f.read()
            docs.extend(module_documents(module, source))
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
    return docs


def write_corpus(docs, path):
    """Writes documents in create_pretraining_data's format, atomically; returns
    {"documents", "sentences", "words", "bytes"}."""
    text = "\n\n".join("\n".join(d.sentences) for d in docs) + "\n"
    fileio.atomic_write_text(path, text)
    return {"documents": len(docs), "sentences": sum(len(d.sentences) for d in docs),
            "words": len(text.split()), "bytes": len(text.encode("utf-8"))}


def python_version():
    return ".".join(map(str, sys.version_info[:3]))
