"""The README's main job: BERT from raw text to a served prediction, on data harvested from the
installed Python standard library (nothing downloaded).

Every stage is one of the commands docs/quickstart.md documents, run as a process of its own,
forked from an interpreter that has imported TensorFlow once (bert_tf.processes: ~5 s less per
stage), the first, pure Python, through the same entry point in this process; each command is
printed so it can be rerun, or rerun on other data. Console output keeps the progress lines and each stage's key
numbers; the full output of every command goes to OUTPUT_DIR/logs/. This process never imports
TensorFlow.

Reruns reuse finished stages: a stage is skipped when its outputs exist and its command (and
those of the stages before it) are unchanged. A stage interrupted half-way is resumed by its
command (run_pretraining / run_classifier restart from their last checkpoint,
create_pretraining_data from its last finished shard); a stage whose command or inputs changed
starts from scratch.
"""

import dataclasses
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import threading
import time

import bert_tf
from bert_tf import fileio, processes

REPO = os.path.dirname(os.path.dirname(os.path.abspath(bert_tf.__file__)))


@dataclasses.dataclass(frozen=True)
class Settings:
    """Sizes of the run, chosen so that pre-training visibly pays (issue 54): 150 labelled
    sentences, where a model from random weights is weak, and the hour-long recipe's objective
    (quality/results/pretraining_pays_fixed.md) at batch 64 and lr 2e-3. Over seeds 1-3 the
    pre-trained start scored 9.3-17.4 points above random weights on the test set
    (quality/results/quickstart_pretraining.md)."""
    packages: tuple = ("asyncio", "email", "tkinter")
    corpus_packages: tuple = None            # None: the whole standard library
    max_per_label: int = None
    train_per_label: int = 50                # labelled training sentences per package
    # Also fine-tune from random weights (stage 8b) and print both accuracies.
    compare_random_init: bool = True
    vocab_size: int = 3000                   # about what the corpus supports at count >= 10
    num_unused: int = 99                     # [PAD]=0 [unused0..98] [UNK]=100 ... [MASK]=103
    max_seq_length: int = 64
    max_predictions_per_seq: int = 10
    dupe_factor: int = 3
    model_preset: str = "tiny"
    pretrain_steps: int = 1500
    pretrain_batch_size: int = 64
    pretrain_learning_rate: float = 2e-3
    pretrain_iterations_per_loop: int = 100
    # XLA: 253 against 197 examples/s at batch 16 on 2 cores, after an 18 s first loop that
    # compiles (benchmarks/results/pretraining_quickstart.md); bf16 was slower with or without it.
    pretrain_jit_compile: bool = True
    # Records left unmasked and masked afresh on every read, whole words at a time, masked LM
    # only: with static masks and next sentence the same budget gave +2.2 points, not +12.
    pretrain_dynamic_masking: bool = True
    pretrain_whole_word_mask: bool = True
    pretrain_next_sentence: bool = False
    max_eval_steps: int = 50
    classifier_seq_length: int = 64
    # 150 sentences are 5 steps an epoch: 30 epochs are 150 steps.
    classifier_epochs: float = 30.0
    classifier_batch_size: int = 32
    classifier_learning_rate: float = 1e-3
    classifier_eval_every_steps: int = 50
    seed: int = 12345


# Every stage with a few steps (about 2 minutes, most of it TensorFlow start-up): a check of the
# wiring, not a model.
SMOKE = Settings(corpus_packages=("json",), max_per_label=60, vocab_size=1000,
                 max_seq_length=32, max_predictions_per_seq=5, dupe_factor=1,
                 pretrain_steps=6, pretrain_batch_size=8, pretrain_iterations_per_loop=3,
                 pretrain_jit_compile=False,
                 max_eval_steps=2, classifier_seq_length=32, classifier_epochs=1.0,
                 classifier_batch_size=16, classifier_eval_every_steps=5)

FILL_MASK_TEXTS = ("Return the current event [MASK].",
                   "Set the [MASK] of the message payload.")
REQUESTS = ("Schedule the callback to run on the event loop once the future is done.",
            "Return the value of the Content-Type header of this message.",
            "Configure the background colour of the widget and redraw the canvas.")


# --------------------------------------------------------------------------- commands
def _script(name):
    path = os.path.join(REPO, name)
    if not os.path.exists(path):
        raise SystemExit(f"{path} not found: the quickstart runs the repository's scripts; run "
                         f"it from a source checkout (pip install -e .)")
    rel = os.path.relpath(path)
    return rel if not rel.startswith("..") else path


def _flags(**values):
    out = []
    for name, value in values.items():
        if value is None:
            continue
        if isinstance(value, bool):
            out.append(f"--{name}" if value else f"--no{name}")
        elif isinstance(value, (list, tuple)):
            out.append(f"--{name}={','.join(map(str, value))}")
        else:
            out.append(f"--{name}={value}")
    return out


@dataclasses.dataclass
class Stage:
    name: str
    title: str
    argv: list                   # after `python`
    outputs: list                # exist when the stage has finished
    clear: list = dataclasses.field(default_factory=list)   # removed before a fresh start
    in_process: object = None    # callable(argv) running the same entry point here
    report: object = None        # callable() printing the stage's key numbers

    def display(self):
        return "python " + shlex.join(self.argv)


class Pipeline:
    def __init__(self, output_dir, settings=Settings(), verbose=False):
        self.out = output_dir
        self.s = settings
        self.verbose = verbose
        self.timings = []
        self.numbers = {}
        self._chain = hashlib.sha1(repr(settings).encode()).hexdigest()

    def path(self, *parts):
        return os.path.join(self.out, *parts)

    # ----------------------------------------------------------------------- running stages
    def _stamp(self, stage, kind):
        return self.path(".stages", f"{stage.name}.{kind}")

    def _read(self, path):
        if not os.path.exists(path):
            return None
        with open(path, encoding="utf-8") as f:
            return f.read().strip()

    def run(self, stage):
        """Runs a stage (or reuses its finished outputs), then prints its key numbers."""
        self._chain = hashlib.sha1((self._chain + stage.display()).encode()).hexdigest()
        print(f"\n== {stage.title}", flush=True)
        print(f"$ {stage.display()}", flush=True)
        log = self.path("logs", f"{stage.name}.log")
        stdout_file = self.path("logs", f"{stage.name}.stdout")
        done = self._read_done(stage)
        finished = (done.get("chain") == self._chain
                    and all(os.path.exists(p) for p in stage.outputs))
        started = time.perf_counter()
        if finished:
            print(f"(finished by an earlier run in {done.get('seconds', 0):.1f}s: reusing its "
                  f"outputs; delete {self._stamp(stage, 'done')} to redo it)")
            stdout = self._read(stdout_file) or ""
            if stdout:
                print(stdout)
        else:
            if self._read(self._stamp(stage, "started")) != self._chain:
                for path in stage.clear:        # other command or inputs: start afresh
                    _remove(path)
            fileio.atomic_write_text(self._stamp(stage, "started"), self._chain)
            os.makedirs(os.path.dirname(log), exist_ok=True)
            try:
                stdout = self._execute(stage, log)
            except KeyboardInterrupt:
                print(f"\nstage {stage.name} interrupted: rerun the same command to resume "
                      f"(log: {log})", file=sys.stderr, flush=True)
                raise
            fileio.atomic_write_text(stdout_file, stdout)
            missing = [p for p in stage.outputs if not os.path.exists(p)]
            if missing:
                raise SystemExit(f"stage {stage.name}: finished without writing "
                                 f"{', '.join(missing)} (log: {log})")
            seconds = time.perf_counter() - started
            fileio.atomic_write_text(self._stamp(stage, "done"), json.dumps(
                {"chain": self._chain, "seconds": round(seconds, 1)}))
        seconds = time.perf_counter() - started if not finished else done.get("seconds", 0.0)
        self.timings.append((stage.name, seconds, finished))
        if stage.report is not None:
            stage.report()
        print(f"[{stage.name}: {seconds:.1f}s{' (earlier run)' if finished else ''}]",
              flush=True)

    def _read_done(self, stage):
        """The done stamp of a stage: {"chain", "seconds"}, or {} when there is none."""
        text = self._read(self._stamp(stage, "done"))
        try:
            return json.loads(text) if text else {}
        except ValueError:
            return {}

    def _execute(self, stage, log):
        """Runs the stage; returns its stdout (also printed). Fails with the log's tail."""
        if stage.in_process is not None:
            import contextlib
            import io
            buffer = io.StringIO()
            with contextlib.redirect_stdout(buffer):
                code = stage.in_process(stage.argv[2:])
            text = buffer.getvalue()
            print(text, end="", flush=True)
            with open(log, "w", encoding="utf-8") as f:
                f.write(text)
            if code:
                raise SystemExit(f"stage {stage.name} failed (exit {code}); see {log}")
            return text
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONUNBUFFERED="1")
        stdout_lines = []
        with open(log, "w", encoding="utf-8") as log_file:
            proc = processes.popen([sys.executable] + stage.argv, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, env=env, bufsize=1)
            lock = threading.Lock()

            def pump(stream, is_stdout):
                for line in stream:
                    with lock:
                        log_file.write(line)
                        log_file.flush()
                        if is_stdout:
                            stdout_lines.append(line)
                        shown = line.rstrip("\n") if (is_stdout or self.verbose) else \
                            _console_line(line)
                        if shown is not None:
                            print(shown, flush=True)

            errors = threading.Thread(target=pump, args=(proc.stderr, False), daemon=True)
            errors.start()
            try:
                pump(proc.stdout, True)
                errors.join()
                code = proc.wait()
            except BaseException:        # interrupted (Ctrl-C, SIGTERM): let the command stop
                _stop(proc)              # cleanly (the runners checkpoint on SIGTERM)
                raise
        if code:
            with open(log, encoding="utf-8") as f:
                tail = f.read().splitlines()[-25:]
            print("\n".join(tail), file=sys.stderr)
            raise SystemExit(f"stage {stage.name} failed (exit {code}); full output: {log}")
        return "".join(stdout_lines)

    # ----------------------------------------------------------------------- the stages
    def stages(self):
        """Every stage, in order: the text and its records, the model, the task."""
        yield from self._data_stages()
        yield from self._model_stages()
        yield from self._task_stages()

    def _data_stages(self):
        """1-4: the text, its vocabulary, the pre-training and held-out records."""
        s, p = self.s, self.path
        train_records = [p("pretraining_data", f"train-{i}.tfrecord") for i in range(2)]
        heldout_records = p("pretraining_data", "heldout.tfrecord")
        yield Stage(
            "data", "1. Text: docstrings of the installed Python standard library",
            ["-m", "bert_tf.quickstart.data"] + _flags(
                output_dir=p("data"), packages=s.packages, corpus_packages=s.corpus_packages,
                max_per_label=s.max_per_label, max_train_per_label=s.train_per_label),
            [p("data", "summary.json")], in_process=_data_main, report=self.report_data)
        yield Stage(
            "vocab", "2. WordPiece vocabulary learned from that text",
            [_script("build_vocab.py")] + _flags(
                input_file=p("data", "pretrain.txt"), output_file=p("vocab.txt"),
                vocab_size=s.vocab_size, num_unused=s.num_unused),
            [p("vocab.txt")], report=self.report_vocab)
        records = dict(vocab_file=p("vocab.txt"), do_lower_case=True,
                       max_seq_length=s.max_seq_length,
                       max_predictions_per_seq=s.max_predictions_per_seq,
                       random_seed=s.seed, shard_size_mb=0.5,
                       dynamic_masking=s.pretrain_dynamic_masking or None)
        objective = "masked LM" + (" + next sentence" if s.pretrain_next_sentence else "")
        yield Stage(
            "pretraining_data", f"3. Pre-training records ({objective})",
            [_script("create_pretraining_data.py")] + _flags(
                input_file=p("data", "pretrain.txt"), output_file=train_records,
                dupe_factor=s.dupe_factor, **records),
            [train_records[0] + ".summary.json"], clear=train_records + [
                train_records[0] + ".summary.json"],
            report=lambda: self.report_records(train_records[0]))
        yield Stage(
            "heldout_data", "4. Held-out records (documents kept out of pre-training)",
            [_script("create_pretraining_data.py")] + _flags(
                input_file=p("data", "heldout.txt"), output_file=heldout_records,
                dupe_factor=1, **records),
            [heldout_records + ".summary.json"],
            clear=[heldout_records, heldout_records + ".summary.json"],
            report=lambda: self.report_records(heldout_records))

    def _model_stages(self):
        """5-7: the configuration, pre-training, and what the model learnt."""
        s, p = self.s, self.path
        heldout_records = p("pretraining_data", "heldout.tfrecord")
        # A generator: this line runs after the vocab stage has been run.
        vocab_size = _count_lines(p("vocab.txt"))
        code = (f"from bert_tf import BertConfig; BertConfig.from_preset("
                f"{json.dumps(s.model_preset)}, vocab_size={vocab_size}).to_json_file("
                f"{json.dumps(p('bert_config.json'))})")
        yield Stage(
            "config", f"5. Model configuration: the {s.model_preset!r} preset with this "
                      f"vocabulary", ["-c", code], [p("bert_config.json")],
            report=self.report_config)
        yield Stage(
            "pretrain", f"6. Pre-training a {s.model_preset!r} BERT",
            [_script("run_pretraining.py")] + _flags(
                bert_config_file=p("bert_config.json"),
                input_file=p("pretraining_data", "train-*.tfrecord"),
                eval_input_file=heldout_records, output_dir=p("pretrain"), do_train=True,
                do_eval=True, max_seq_length=s.max_seq_length,
                max_predictions_per_seq=s.max_predictions_per_seq,
                train_batch_size=s.pretrain_batch_size, eval_batch_size=s.pretrain_batch_size,
                num_train_steps=s.pretrain_steps, num_warmup_steps=s.pretrain_steps // 10,
                learning_rate=s.pretrain_learning_rate,
                iterations_per_loop=s.pretrain_iterations_per_loop,
                jit_compile=s.pretrain_jit_compile,
                dynamic_masking=s.pretrain_dynamic_masking or None,
                vocab_file=p("vocab.txt") if s.pretrain_dynamic_masking else None,
                do_whole_word_mask=s.pretrain_whole_word_mask or None,
                use_next_sentence=None if s.pretrain_next_sentence else False,
                save_checkpoints_steps=_checkpoint_every(s.pretrain_steps,
                                                         s.pretrain_iterations_per_loop),
                max_eval_steps=s.max_eval_steps, seed=s.seed),
            [p("pretrain", "eval_results.txt")], clear=[p("pretrain")],
            report=self.report_pretrain)
        yield Stage(
            "fill_mask", "7. What the pre-trained model learnt: fill in [MASK]",
            [_script("predict_masked.py")] + _flags(init_checkpoint=p("pretrain"),
                                                    vocab_file=p("vocab.txt"), top_k=5)
            + [f"--text={t}" for t in FILL_MASK_TEXTS], [])

    def _task_stages(self):
        """8-11: fine-tuning (from random weights too), the export, requests, the curves."""
        s, p = self.s, self.path
        yield self._classifier_stage(
            "classifier", "8. Fine-tuning: which package does a docstring sentence come from?",
            p("pretrain"), self.report_classifier)
        if s.compare_random_init:
            yield self._classifier_stage(
                "classifier_random", "8b. The same fine-tuning from random weights",
                None, self.report_random_init)
        yield Stage(
            "export", "9. SavedModel export for TensorFlow Serving",
            [_script("export_savedmodel.py")] + _flags(
                init_checkpoint=p("classifier", "best"), task="classifier",
                labels=sorted(s.packages), max_seq_length=s.classifier_seq_length,
                export_dir=p("serving")),
            [p("serving", "1", "saved_model.pb")], clear=[p("serving")],
            report=self.report_export)
        yield Stage(
            "serve", "10. Raw-text requests through the exported serving_default signature",
            ["-m", "bert_tf.quickstart.serve"] + _flags(
                export_dir=p("serving"), input_file=p("data", "task", "test.tsv"),
                output_file=p("serving_test_predictions.tsv"))
            + [f"--text={t}" for t in REQUESTS], [p("serving_test_predictions.tsv")],
            report=self.report_serve)
        yield Stage(
            "plot", "11. Training curves from the TensorBoard event files",
            ["-m", "bert_tf.plot_metrics", p("pretrain"), p("classifier")]
            + ([p("classifier_random")] if s.compare_random_init else [])
            + [f"--output={p('training_curves.png')}"], [p("training_curves.png")],
            report=self.report_plot)

    def _classifier_stage(self, name, title, init_checkpoint, report):
        """run_classifier.py on the task, from `init_checkpoint` (None: random weights)."""
        s, p = self.s, self.path
        return Stage(
            name, title, [_script("run_classifier.py")] + _flags(
                task_name="generic", data_dir=p("data", "task"), text_a_column="sentence",
                label_column="package", vocab_file=p("vocab.txt"),
                bert_config_file=p("bert_config.json"), init_checkpoint=init_checkpoint,
                do_train=True, do_eval=True, do_predict=True,
                max_seq_length=s.classifier_seq_length,
                train_batch_size=s.classifier_batch_size,
                learning_rate=s.classifier_learning_rate,
                num_train_epochs=s.classifier_epochs,
                eval_every_steps=s.classifier_eval_every_steps,
                iterations_per_loop=s.classifier_eval_every_steps,
                output_dir=p(name), seed=s.seed),
            [p(name, "eval_results.txt"), p(name, "test_predictions.tsv")], clear=[p(name)],
            report=report)

    def run_all(self):
        started = time.perf_counter()
        print(f"bert_tf quickstart: output in {os.path.abspath(self.out)} "
              f"(Python {'.'.join(map(str, sys.version_info[:3]))}, settings: "
              f"{'smoke' if self.s == SMOKE else 'default'})")
        # The stages' fork server imports TensorFlow while the first, pure-Python stage runs.
        processes.start_server(dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
        for stage in self.stages():
            self.run(stage)
        wall = time.perf_counter() - started
        stage_total = sum(seconds for _, seconds, _ in self.timings)
        print("\n== Summary")
        for name, seconds, reused in self.timings:
            print(f"  {name:17s} {seconds:7.1f}s{'  (earlier run, reused)' if reused else ''}")
        print(f"  {'all stages':17s} {stage_total:7.1f}s  (this run: {wall:.1f}s)")
        for key, value in self.numbers.items():
            print(f"  {key}: {value}")
        self.numbers["stage_seconds"] = {name: round(seconds, 1)
                                         for name, seconds, _ in self.timings}
        self.numbers["total_seconds"] = round(stage_total, 1)
        fileio.atomic_write_text(self.path("quickstart_results.json"),
                                 json.dumps(self.numbers, indent=2) + "\n")
        return self.numbers

    # ----------------------------------------------------------------------- key numbers
    def report_data(self):
        with open(self.path("data", "summary.json"), encoding="utf-8") as f:
            summary = json.load(f)
        self.numbers["pretraining_sentences"] = summary["pretrain"]["sentences"]
        self.numbers["task_examples"] = {split: sum(counts.values()) for split, counts
                                         in summary["task"]["examples"].items()}

    def report_vocab(self):
        from bert_tf.tokenization import FullTokenizer
        tokenizer = FullTokenizer(self.path("vocab.txt"), do_lower_case=True)
        sample = REQUESTS[0]
        print(f"{len(tokenizer.vocab)} tokens; {sample!r} ->")
        print("  " + " ".join(tokenizer.tokenize(sample)))
        self.numbers["vocab_size"] = len(tokenizer.vocab)

    def report_records(self, first_output):
        with open(first_output + ".summary.json", encoding="utf-8") as f:
            summary = json.load(f)
        nsp = summary["next_sentence"]
        masking = ("masked afresh on every read" if self.s.pretrain_dynamic_masking
                   else f"masked fraction {summary['masked_fraction']:.3f}")
        print(f"{summary['instances']} instances, {summary['tokens']:,} tokens "
              f"({summary['mean_tokens_per_instance']} per instance), {masking}, random next "
              f"sentence {nsp['random_next_fraction']:.2f}, {summary['seconds']}s")
        key = "heldout_instances" if "heldout" in first_output else "pretraining_instances"
        self.numbers[key] = summary["instances"]

    def report_config(self):
        with open(self.path("bert_config.json"), encoding="utf-8") as f:
            config = json.load(f)
        print(", ".join(f"{k}={config[k]}" for k in ("num_hidden_layers", "hidden_size",
                                                     "num_attention_heads", "vocab_size",
                                                     "max_position_embeddings")))

    def report_pretrain(self):
        from bert_tf.metrics.results import read_eval_results
        values = read_eval_results(self.path("pretrain", "eval_results.txt"))
        keys = [k for k in ("masked_lm_accuracy", "masked_lm_loss", "next_sentence_accuracy",
                            "next_sentence_loss", "loss") if k in values]
        print(f"held-out eval at step {values.get('global_step')}: "
              + ", ".join(f"{k}={float(values[k]):.4f}" for k in keys))
        for k in ("masked_lm_accuracy", "next_sentence_accuracy"):
            if k in values:
                self.numbers[f"pretrain_heldout_{k}"] = round(float(values[k]), 4)

    def _accuracies(self, name):
        """(dev accuracy, test accuracy) of classifier run `name`: the dev figure of its
        eval_results.txt (the best step's), the test figure from its test_predictions.tsv."""
        from bert_tf.metrics.results import read_eval_results
        from bert_tf.quickstart.task import read_tsv
        dev = float(read_eval_results(self.path(name, "eval_results.txt"))["eval_accuracy"])
        gold = [label for _, label in read_tsv(self.path("data", "task", "test.tsv"))]
        predicted = _predictions(self.path(name, "test_predictions.tsv"))
        test = sum(a == b for a, b in zip(predicted, gold)) / max(len(gold), 1)
        return round(dev, 4), round(test, 4)

    def report_classifier(self):
        dev, test = self._accuracies("classifier")
        print(f"dev accuracy {dev:.4f}, test accuracy {test:.4f} (chance "
              f"{1 / len(self.s.packages):.3f}); test predictions in "
              f"{self.path('classifier', 'test_predictions.tsv')}")
        self.numbers["classifier_dev_accuracy"] = dev
        self.numbers["classifier_test_accuracy"] = test

    def report_random_init(self):
        dev, test = self._accuracies("classifier_random")
        self.numbers["random_init_dev_accuracy"] = dev
        self.numbers["random_init_test_accuracy"] = test
        gain = 100 * (self.numbers["classifier_test_accuracy"] - test)
        self.numbers["pretraining_gain_test_points"] = round(gain, 1)
        print(f"from random weights: dev accuracy {dev:.4f}, test accuracy {test:.4f}; "
              f"pre-training {'adds' if gain >= 0 else 'loses'} {abs(gain):.1f} points of test "
              f"accuracy")

    def report_export(self):
        from bert_tf.quickstart.serve import version_path
        path = version_path(self.path("serving"))
        with open(os.path.join(path, "assets.extra", "export_info.json"), encoding="utf-8") as f:
            info = json.load(f)
        size = sum(os.path.getsize(os.path.join(d, n)) for d, _, files in os.walk(path)
                   for n in files)
        print(f"{path}: signatures {', '.join(info['signatures'])}; labels {info['labels']}; "
              f"{size / 1e6:.1f} MB")

    def report_serve(self):
        stdout = self._read(self.path("logs", "serve.stdout")) or ""
        found = re.search(r"accuracy ([0-9.]+)", stdout)
        if found:
            self.numbers["savedmodel_test_accuracy"] = float(found.group(1))
        # The exported model must agree with run_classifier's own test predictions.
        served = _predictions(self.path("serving_test_predictions.tsv"))
        runner = _predictions(self.path("classifier", "test_predictions.tsv"))
        same = sum(a == b for a, b in zip(served, runner))
        print(f"SavedModel and run_classifier --do_predict agree on {same}/{len(runner)} test "
              f"sentences")
        self.numbers["savedmodel_agrees_with_runner"] = f"{same}/{len(runner)}"
        if len(served) != len(runner) or same != len(runner):
            raise SystemExit("the exported model disagrees with run_classifier's predictions")
        first = re.search(r"^\s*(\S+)\s+\((.*?)\)\s+(.*)$", stdout, re.M)
        if first:
            self.numbers["final_prediction"] = f"{first.group(3)!r} -> {first.group(1)}"

    def report_plot(self):
        self.numbers["training_curves"] = os.path.abspath(self.path("training_curves.png"))
        print(f"open {self.numbers['training_curves']}")


def _checkpoint_every(steps, steps_per_loop):
    """Two checkpoints per run, at loop boundaries."""
    return max(steps // 2 // steps_per_loop * steps_per_loop, steps_per_loop)


def _stop(proc, grace_seconds=300):
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(grace_seconds)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _remove(path):
    if os.path.isdir(path):
        shutil.rmtree(path)
    elif os.path.exists(path):
        os.remove(path)


def _count_lines(path):
    if not os.path.exists(path):
        return 0
    with open(path, encoding="utf-8") as f:
        return sum(1 for line in f if line.strip())


def _predictions(path):
    """The prediction column of an `index<TAB>prediction` file, in file order."""
    with open(path, encoding="utf-8") as f:
        return [line.split("\t")[1] for line in f.read().splitlines()[1:] if line]


def _data_main(argv):
    from bert_tf.quickstart import data
    return data.main(argv)


_PROGRESS = re.compile(r"step (\d+)/(\d+) (.*?) eta=(\S+)")
_SHOW = ("eval at step", "new best", "early stopping", " ERROR ", "Error:", "Traceback",
         "error:")
_TF_NATIVE_LOG = re.compile(r"^[IWEF]\d{4} ")       # TensorFlow's C++ log lines


def _console_line(line):
    """What a runner's log line shows on the console (None: the log file only): training
    progress compacted, evaluations and errors as they are."""
    found = _PROGRESS.search(line)
    if found:
        step, total, rest, eta = found.groups()
        values = dict(kv.split("=", 1) for kv in rest.split() if "=" in kv)
        done = int(step) / max(int(total), 1)
        bar = "#" * round(20 * done) + "." * (20 - round(20 * done))
        shown = [f"[{bar}] step {step:>5}/{total}"]
        for key, label in (("loss", "loss"), ("masked_lm_accuracy", "mlm_acc"),
                           ("next_sentence_accuracy", "nsp_acc"), ("accuracy", "acc"),
                           ("learning_rate", "lr"), ("examples_per_sec", "ex/s")):
            if key in values:
                shown.append(f"{label} {float(values[key]):.4g}")
        return "  " + "  ".join(shown) + f"  eta {eta}"
    if any(marker in line for marker in _SHOW) and not _TF_NATIVE_LOG.match(line):
        return "  " + line.rstrip("\n").split(" INFO ", 1)[-1]
    return None
