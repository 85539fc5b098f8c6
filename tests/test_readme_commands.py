"""The commands of README.md and docs/*.md (and the quickstart's) name scripts that exist and
flags they define, and the pages' relative links resolve.

Commands are read from the pages' ```bash blocks (continuation lines joined, comments
dropped). For `python SCRIPT` / `python -m MODULE`, the flags a script defines are what the
script itself lists with --helpfull (absl: shared definitions of bert_tf/flags.py included) or
--help (argparse), each run as if started alone (tests/support/help_texts.py); nothing is
trained.
"""

import functools
import json
import os
import re
import shlex
import sys
from pathlib import Path

import pytest
from bert_tf import processes

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
QUICKSTART_PAGE = REPO / "docs" / "quickstart.md"
PAGES = [README] + sorted((REPO / "docs").glob("*.md"))

# Programs README commands may call besides python/bash: external tools, shell built-ins.
EXTERNAL = {"pip", "pip3", "curl", "tensorflow_model_server", "saved_model_cli", "tensorboard",
            "docker", "export", "cd", "mkdir", "ls", "cat", "head", "tail", "gsutil"}
_FLAG_IN_HELP = re.compile(r"^\s*(?:-\w, )?--(\[no\])?([A-Za-z_][\w-]*)", re.M)
_ARGPARSE_FLAG = re.compile(r"(?<![\w-])--(\[no\])?([A-Za-z_][\w-]*)")


def bash_blocks(text):
    """(line number, block text) of each ```bash / ```sh / ```shell block."""
    blocks = []
    for m in re.finditer(r"^```(?:bash|sh|shell)[ \t]*\n(.*?)^```", text, re.M | re.S):
        blocks.append((text.count("\n", 0, m.start()) + 2, m.group(1)))
    return blocks


def commands_of(block, first_line):
    """[(line number, argv)] of a shell block: continuations and multi-line quoted strings
    joined, comments removed, and `a && b`, `a; b`, `a | b` split into their commands."""
    out, pending, start = [], "", None
    for offset, line in enumerate(block.splitlines()):
        if start is None:
            start = first_line + offset
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        pending += line
        try:
            tokens = shlex.split(pending, comments=True)
        except ValueError:          # a quoted string (e.g. JSON) continues on the next line
            pending += "\n"
            continue
        current = []
        for token in tokens + [";"]:
            if token in ("&&", "||", ";", "|"):
                if current:
                    out.append((start, current))
                current = []
            else:
                current.append(token)
        pending, start = "", None
    return out


def page_commands(page):
    """[(line number, argv)] of every command in a page's shell blocks."""
    text = page.read_text(encoding="utf-8")
    return [cmd for line, block in bash_blocks(text) for cmd in commands_of(block, line)]


def slug(heading):
    """GitHub's anchor for a Markdown heading: lower case, punctuation but - and _ dropped,
    spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(text):
    """The anchors of a page's headings (outside code blocks)."""
    prose = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    return {slug(h) for h in re.findall(r"^#{1,6} (.+)$", prose, re.M)}


def relative_links(text):
    """[(line number, target)] of a page's Markdown links that are not URLs, outside code."""
    links = []
    for number, line in enumerate(text.splitlines(), 1):
        for target in re.findall(r"\]\(([^)\s]+)\)", re.sub(r"`[^`]*`", "", line)):
            if not re.match(r"^[a-z]+:", target):
                links.append((number, target))
    return links


def strip_env(argv):
    """argv without leading VAR=value assignments."""
    i = 0
    while i < len(argv) and re.match(r"^[A-Za-z_]\w*=", argv[i]):
        i += 1
    return argv[i:]


def target_of(argv):
    """("script", path) | ("module", name) | ("code", None) | ("bash", path) | ("external",
    program) for a command, and the arguments after the target."""
    argv = strip_env(argv)
    program = argv[0]
    if program in ("python", "python3"):
        if argv[1] == "-m":
            return ("module", argv[2]), argv[3:]
        if argv[1] == "-c":
            return ("code", None), []
        return ("script", argv[1]), argv[2:]
    if program == "bash":
        return ("bash", argv[1]), argv[2:]
    return ("external", program), argv[1:]


def used_flags(args):
    return sorted({a[2:].split("=", 1)[0] for a in args if a.startswith("--") and len(a) > 2})


def _source_file(kind, name):
    if kind == "script":
        return REPO / name
    base = REPO.joinpath(*name.split("."))
    return base.with_suffix(".py") if base.with_suffix(".py").exists() else base / "__main__.py"


def _help_flag(kind, name):
    """absl's --helpfull (every flag defined in the process, shared ones included) or
    argparse's --help."""
    absl = "from absl import" in _source_file(kind, name).read_text(encoding="utf-8")
    return "--helpfull" if absl else "--help"


@functools.lru_cache(maxsize=None)
def _help_outputs():
    """{(kind, name): help output} of every Python target of the pages, collected by one
    process (bert_tf.processes) that forks a child per target
    (tests/support/help_texts.py)."""
    targets = [[kind, name, _help_flag(kind, name)] for kind, name in PYTHON_TARGETS]
    run = processes.run([sys.executable, str(REPO / "tests" / "support" / "help_texts.py"),
                        json.dumps(targets)], capture_output=True, text=True, cwd=REPO,
                        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"), timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    return {(out["kind"], out["name"]): out for out in json.loads(run.stdout)}


@functools.lru_cache(maxsize=None)
def defined_flags(kind, name):
    """(flags, boolean flags) a script or module defines, from its own help output."""
    help_flag = _help_flag(kind, name)
    run = _help_outputs()[(kind, name)]
    help_text = run["stdout"]
    if help_flag == "--helpfull":   # the docstring, then "flags:" and each module's; exit 1
        ok = run["returncode"] == 1 and "\nflags:\n" in help_text
        help_text = help_text.split("\nflags:\n", 1)[-1]
    else:
        ok = run["returncode"] == 0
    assert ok, f"{name} {help_flag} failed:\n{run['stderr'][-2000:]}"
    pattern = _FLAG_IN_HELP if help_flag == "--helpfull" else _ARGPARSE_FLAG
    flags, bools = set(), set()
    for negatable, flag in pattern.findall(help_text):
        flags.add(flag)
        if negatable:
            bools.add(flag)
    flags.update({"help", "helpfull", "helpshort", "flagfile"} if help_flag == "--helpfull"
                 else {"help"})
    return frozenset(flags), frozenset(bools)


def unknown_flags(kind, name, args):
    flags, bools = defined_flags(kind, name)
    return [f for f in used_flags(args)
            if f not in flags and not (f.startswith("no") and f[2:] in bools)]


def _module_exists(name):
    parts = name.split(".")
    base = REPO.joinpath(*parts)
    return base.with_suffix(".py").exists() or (base / "__main__.py").exists()


COMMANDS = [(page.relative_to(REPO).as_posix(), line, argv)
            for page in PAGES for line, argv in page_commands(page)]
PYTHON_TARGETS = sorted({target_of(argv)[0] for _, _, argv in COMMANDS
                         if target_of(argv)[0][0] in ("script", "module")})


@pytest.fixture(scope="module")
def help_outputs():
    """The help output of every target, collected once (a few seconds: one TensorFlow import)."""
    return _help_outputs()


def test_readme_starts_with_the_two_commands():
    first_line, first_block = bash_blocks(README.read_text(encoding="utf-8"))[0]
    argvs = [argv for _, argv in commands_of(first_block, first_line)]
    assert argvs[:2] == [["bash", "quickstart.sh"], ["bash", "run_tests.sh"]]


def test_readme_names_every_runner_and_the_docs_show_each_one_run():
    runners = sorted(p.name for p in REPO.glob("*.py"))
    readme = README.read_text(encoding="utf-8")
    assert [r for r in runners if f"`{r}`" not in readme] == []
    used = {name for (kind, name) in PYTHON_TARGETS if kind == "script"}
    assert set(runners) <= used, f"runners without a command in the docs: {set(runners) - used}"


@pytest.mark.parametrize("page,line,argv", COMMANDS,
                         ids=[f"{page}:{line}-{' '.join(strip_env(a)[:2])}"
                              for page, line, a in COMMANDS])
def test_command_target_exists_and_flags_are_defined(page, line, argv, help_outputs):
    (kind, name), args = target_of(argv)
    where = f"{page} line {line}"
    if kind == "external":
        assert name in EXTERNAL, f"{where}: unknown program {name!r} in {argv}"
        return
    if kind == "code":
        return
    if kind in ("script", "bash"):
        assert (REPO / name).is_file(), f"{where}: {name} does not exist"
    if kind == "module":
        assert _module_exists(name), f"{where}: no module {name} in the repository"
    if kind in ("script", "module"):
        bad = unknown_flags(kind, name, args)
        assert not bad, f"{where}: {name} defines no flag(s) {bad}"


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(REPO).as_posix() for p in PAGES])
def test_relative_links_resolve(page):
    """Each relative link names an existing file, and a #fragment a heading of its page."""
    broken = []
    for line, target in relative_links(page.read_text(encoding="utf-8")):
        path, _, fragment = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append((line, target))
        elif fragment and file.suffix == ".md" and \
                fragment not in anchors(file.read_text(encoding="utf-8")):
            broken.append((line, target))
    assert broken == [], f"{page.name}: broken links (line, target) {broken}"


def test_quickstart_commands_use_defined_flags(tmp_path, help_outputs):
    """The main job's stage commands, built without running them, use only real flags."""
    from bert_tf.quickstart.pipeline import Pipeline
    stages = list(Pipeline(str(tmp_path / "out")).stages())
    assert len(stages) >= 10
    for stage in stages:
        (kind, name), args = target_of(["python"] + stage.argv)
        if kind == "script":
            name = os.path.relpath(os.path.abspath(name), REPO)
        if kind in ("script", "module"):
            assert not unknown_flags(kind, name, args), (stage.name, stage.display())


def test_docs_show_the_quickstart_commands_as_it_runs_them():
    """Each stage of the main job (with its default output folder) is a command of
    docs/quickstart.md, word for word; the configuration stage's vocabulary size is computed, so
    only its target is compared."""
    from bert_tf.quickstart.pipeline import Pipeline
    shown = [strip_env(argv)[1:] for _, argv in page_commands(QUICKSTART_PAGE)
             if strip_env(argv)[0] == "python"]
    for stage in Pipeline("quickstart_out").stages():
        argv = list(stage.argv)
        if argv[0] == "-c":
            assert any(a[0] == "-c" and "from_preset(" in a[1] for a in shown)
            continue
        if argv[0] != "-m":
            argv[0] = os.path.relpath(os.path.abspath(argv[0]), REPO)
        assert argv in shown, \
            f"stage {stage.name}: docs/quickstart.md lacks `python {shlex.join(argv)}`"


def test_parsing_of_shell_blocks():
    text = ("intro\n```bash\nTF_CONFIG='{\"a\": 1}' python run_x.py --a=1 \\\n  --nob  # c\n"
            "bash go.sh && curl -d '{\n}' http://h\n```\n")
    (line, block), = bash_blocks(text)
    commands = commands_of(block, line)
    assert [argv for _, argv in commands] == [
        ["TF_CONFIG={\"a\": 1}", "python", "run_x.py", "--a=1", "--nob"],
        ["bash", "go.sh"], ["curl", "-d", "{\n}", "http://h"]]
    assert [n for n, _ in commands] == [3, 5, 5]
    assert target_of(commands[0][1]) == (("script", "run_x.py"), ["--a=1", "--nob"])
    assert used_flags(["--a=1", "--nob", "x", "--"]) == ["a", "nob"]


def test_parsing_of_links_and_anchors():
    text = ("# Serving with `tensorflow_model_server`\n## `run_squad.py`: SQuAD v1.1\n"
            "see [a](docs/a.md#x), [b](#y), [c](https://h/x) and `[d](e.md)`\n```\n# no\n```\n")
    assert anchors(text) == {"serving-with-tensorflow_model_server", "run_squadpy-squad-v11"}
    assert relative_links(text) == [(3, "docs/a.md#x"), (3, "#y")]
