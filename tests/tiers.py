"""The fast and slow test tiers, from a committed profile of the suite's own timings.

`tests/profile.jsonl` holds one row per test (its own seconds: setup of its function-scoped
fixtures, call, teardown) and one per module- or session-scoped fixture (the seconds of its
setup, paid once by whichever test needs it first). A test is `slow` when its own time is over
TEST_SECONDS or when it needs a fixture whose setup is over FIXTURE_SECONDS; tests may also be
marked `@pytest.mark.slow` by hand.

  pytest --fast                  runs only the tests that are not slow (bash run_tests.sh --fast)
  pytest --write-profile=PATH    times every test and fixture of the run and writes the profile

Under --fast the profile is checked, without failing anything (a slower or busier machine than
the one that wrote the profile is no fault of the code): the tests not marked slow whose own
time, or a fixture they set up, went over the threshold times TOLERANCE are listed with their
times at the end of the run, so the profile cannot drift out of date unnoticed.
"""

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

PROFILE = Path(__file__).with_name("profile.jsonl")
TEST_SECONDS = 1.0
FIXTURE_SECONDS = 3.0
# 3: with the slow tests left out, the first fast test of a worker to use something shared (a
# tokenizer's or step's trace, a fixture's model) pays for it; measured 2.0-3.1 s for tests of
# 0.4-1.0 s in the profile (2026-12-02).
TOLERANCE = 3.0
OVER_LIMIT = "tier_over_limit"       # a report's user property: why it outgrew the fast tier

_COST = pytest.StashKey[dict]()


def pytest_addoption(parser):
    group = parser.getgroup("tiers", "fast and slow tiers (tests/tiers.py)")
    group.addoption("--fast", action="store_true",
                    help="run only the tests the committed profile does not mark slow")
    group.addoption("--write-profile", metavar="PATH",
                    help="time every test and wide-scope fixture and write the profile to PATH")


def fixture_key(fixturedef):
    """A wide-scope fixture's name with the node that defines it (names repeat across files)."""
    return f"{fixturedef.baseid or 'tests'}::{fixturedef.argname}"


def _wide_fixtures(item):
    """Keys of the module- and session-scoped fixtures that `item` needs, directly or not."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return []
    keys = []
    for name in info.names_closure:
        for fixturedef in info.name2fixturedefs.get(name, ())[-1:]:
            if fixturedef.scope in ("module", "session", "package", "class"):
                keys.append(fixture_key(fixturedef))
    return keys


def read_profile(path=PROFILE):
    """({test id: own seconds}, {fixture key: setup seconds}) from a profile file."""
    tests, fixtures = {}, {}
    if not path.exists():
        return tests, fixtures
    with open(path, encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            if "test" in row:
                tests[row["test"]] = row["seconds"]
            elif "fixture" in row:
                fixtures[row["fixture"]] = row["seconds"]
    return tests, fixtures


def slow_reason(item, tests, fixtures):
    """Why the profile makes `item` slow, or None."""
    own = tests.get(item.nodeid)
    if own is not None and own > TEST_SECONDS:
        return f"{own:.1f} s in the profile"
    for key in _wide_fixtures(item):
        if fixtures.get(key, 0.0) > FIXTURE_SECONDS:
            return f"needs fixture {key} ({fixtures[key]:.1f} s to set up)"
    return None


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    tests, fixtures = read_profile()
    for item in items:
        if slow_reason(item, tests, fixtures) is not None:
            item.add_marker(pytest.mark.slow)
    if config.getoption("fast"):
        kept = [item for item in items if item.get_closest_marker("slow") is None]
        dropped = [item for item in items if item.get_closest_marker("slow") is not None]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
        items[:] = kept
    _heaviest_files_first(items, tests, fixtures)


def _heaviest_files_first(items, tests, fixtures):
    """Orders the files by their cost in the profile, heaviest first (tests keep their order
    within a file). Under `--dist loadfile --no-loadscope-reorder` xdist hands files out in this
    order, so the long files start first and the short ones fill the end: less time with one
    worker idle. Files the profile does not know yet go first."""
    cost = {}
    for nodeid, seconds in tests.items():
        path = nodeid.split("::")[0]
        cost[path] = cost.get(path, 0.0) + seconds
    for key, seconds in fixtures.items():
        path = key.split("::")[0]
        if path in cost:
            cost[path] += seconds
    order = {id(item): index for index, item in enumerate(items)}
    items.sort(key=lambda item: (-cost.get(item.nodeid.split("::")[0], float("inf")),
                                 order[id(item)]))


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef, request):
    """Times the setup of wide-scope fixtures, charged to the test that triggered it."""
    if fixturedef.scope == "function":
        return (yield)
    start = time.perf_counter()
    try:
        return (yield)
    finally:
        item = request._pyfuncitem  # the test whose setup needed it first (no public name)
        cost = item.stash.setdefault(_COST, {"phases": 0.0, "fixtures": {}})
        cost["fixtures"][fixture_key(fixturedef)] = time.perf_counter() - start


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    cost = item.stash.setdefault(_COST, {"phases": 0.0, "fixtures": {}})
    cost["phases"] += call.duration
    if call.when != "teardown":
        return report
    own = cost["phases"] - sum(cost["fixtures"].values())
    report.user_properties.append(("tier_cost", {"own": round(own, 3),
                                                  "fixtures": cost["fixtures"]}))
    if item.config.getoption("fast"):
        over = []
        if own > TEST_SECONDS * TOLERANCE:
            over.append(f"took {own:.1f} s")
        over += [f"set up fixture {key} in {seconds:.1f} s"
                 for key, seconds in cost["fixtures"].items()
                 if seconds > FIXTURE_SECONDS * TOLERANCE]
        if over:
            report.user_properties.append((OVER_LIMIT, " and ".join(over)))
    return report


class OverLimitReport:
    """Collects the fast tests that went over the tier's limits (from xdist workers too) and
    lists them at the end of the run."""

    def __init__(self):
        self.over = {}

    def pytest_runtest_logreport(self, report):
        for name, value in report.user_properties:
            if name == OVER_LIMIT:
                self.over[report.nodeid] = value

    def pytest_terminal_summary(self, terminalreporter):
        if not self.over:
            return
        terminalreporter.section("fast tests over the tier's limits")
        terminalreporter.write_line(
            f"thresholds {TEST_SECONDS} s per test, {FIXTURE_SECONDS} s per fixture, "
            f"x{TOLERANCE}: on this machine these are slower than the profile says; if they "
            f"stay so, make them cheaper or write the profile again (docs/testing.md)")
        for nodeid, why in sorted(self.over.items()):
            terminalreporter.write_line(f"{nodeid} {why}")


class ProfileWriter:
    """Collects the tier costs reported by the tests (from xdist workers too) and writes the
    profile when the session ends."""

    def __init__(self, path, workers):
        self.path, self.workers = Path(path), workers
        self.tests, self.fixtures, self.outcomes = {}, {}, {}
        self.start = time.time()
        self.finished = {}          # worker id: when its last test ended (s after the start)

    def pytest_runtest_logreport(self, report):
        worker = getattr(getattr(getattr(report, "node", None), "gateway", None), "id", "main")
        self.finished[worker] = max(self.finished.get(worker, 0.0),
                                    getattr(report, "stop", self.start) - self.start)
        if report.when == "call" or (report.when == "setup" and report.skipped):
            self.outcomes[report.nodeid] = report.outcome
        for name, value in report.user_properties:
            if name == "tier_cost":
                self.tests[report.nodeid] = value["own"]
                for key, seconds in value["fixtures"].items():
                    self.fixtures[key] = max(seconds, self.fixtures.get(key, 0.0))

    def pytest_sessionfinish(self, session):
        if not self.tests:
            return
        files = {}
        for nodeid, seconds in self.tests.items():
            files[nodeid.split("::")[0]] = files.get(nodeid.split("::")[0], 0.0) + seconds
        from bert_tf.cpu_features import cpu_flags, cpu_model
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, cwd=Path(__file__).parent).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True,
                               cwd=Path(__file__).parent).stdout.strip() != ""
        rows = [{"meta": {"written": time.strftime("%Y-%m-%d %H:%M:%S"), "commit": commit,
                          "dirty": dirty, "cpu": cpu_model(),
                          "flags": {f: f in cpu_flags()
                                    for f in ("avx512f", "avx512_vnni", "avx512_bf16")},
                          "workers": self.workers,
                          "wall_seconds": round(time.time() - self.start, 1),
                          "worker_finished_seconds": {w: round(t, 1) for w, t
                                                      in sorted(self.finished.items())},
                          "test_seconds": TEST_SECONDS, "fixture_seconds": FIXTURE_SECONDS}}]
        rows += [{"test": nodeid, "seconds": round(seconds, 3),
                  "outcome": self.outcomes.get(nodeid, "")}
                 for nodeid, seconds in sorted(self.tests.items())]
        rows += [{"fixture": key, "seconds": round(seconds, 3)}
                 for key, seconds in sorted(self.fixtures.items())]
        rows += [{"file": name, "seconds": round(seconds, 3)}
                 for name, seconds in sorted(files.items(), key=lambda kv: -kv[1])]
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
        os.replace(tmp, self.path)


def pytest_configure(config):
    if config.getoption("fast") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(OverLimitReport(), "tier-over-limit-report")
    path = config.getoption("write_profile")
    if path and not hasattr(config, "workerinput"):
        workers = getattr(config.option, "numprocesses", None) or 1
        config.pluginmanager.register(ProfileWriter(path, workers), "tier-profile-writer")
