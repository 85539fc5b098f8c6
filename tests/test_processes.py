"""bert_tf.processes: `python <script>` forked from a warm interpreter behaves as its own
process: exit status, streams, environment, working directory, signals and a TensorFlow
runtime of its own."""

import os
import signal
import subprocess
import sys

import pytest

from bert_tf import processes

# The fork server imports TensorFlow (seconds, paid by whichever test of a worker starts it
# first, so the profile cannot be relied on to see it).
pytestmark = pytest.mark.slow

SCRIPT = """
import os, sys
print("args", sys.argv[1:], "cwd", os.getcwd(), "env", os.environ.get("PROBE"))
print("to stderr", file=sys.stderr)
sys.exit(int(sys.argv[1]))
"""


@pytest.fixture(scope="session")
def fork_server():
    """The server started once (it imports TensorFlow: seconds)."""
    processes.run([sys.executable, "-c", "pass"], check=True)


def test_a_script_gets_its_arguments_environment_and_folder_and_returns_its_status(
        fork_server, tmp_path):
    script = tmp_path / "probe.py"
    script.write_text(SCRIPT)
    done = processes.run([sys.executable, str(script), "3"], cwd=tmp_path,
                         env=dict(os.environ, PROBE="yes"), capture_output=True, text=True)
    assert done.returncode == 3
    assert done.stdout == f"args ['3'] cwd {tmp_path} env yes\n"
    assert done.stderr.endswith("to stderr\n")


def test_modules_code_and_uncaught_exceptions_exit_as_the_interpreter_does(fork_server):
    module = processes.run([sys.executable, "-m", "json.tool", "--help"], capture_output=True,
                           text=True)
    assert module.returncode == 0 and "usage:" in module.stdout
    failed = processes.run([sys.executable, "-c", "raise ValueError('bad row 7')"],
                           capture_output=True, text=True)
    assert failed.returncode == 1 and "ValueError: bad row 7" in failed.stderr
    message = processes.run([sys.executable, "-c", "raise SystemExit('no such file')"],
                            capture_output=True, text=True)
    assert message.returncode == 1 and message.stderr.strip().endswith("no such file")


def test_a_killed_process_reports_the_signal_and_a_pipe_streams_lines(fork_server):
    code = "import time\nprint('ready', flush=True)\ntime.sleep(60)\n"
    proc = processes.popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                           bufsize=1)
    assert proc.stdout.readline() == "ready\n"
    proc.send_signal(signal.SIGKILL)
    # The signal, not the end of its 60 s sleep, ended it: the return code says so whatever the
    # machine's speed (the timeout only bounds a hang).
    assert proc.wait(timeout=120) == -signal.SIGKILL
    proc.stdout.close()


def test_each_process_starts_its_own_tensorflow_runtime(fork_server):
    # Devices can still be configured: the server imported TensorFlow but ran no op.
    code = ("import tensorflow as tf\n"
            "cpu = tf.config.list_physical_devices('CPU')[0]\n"
            "three = [tf.config.LogicalDeviceConfiguration()] * 3\n"
            "tf.config.set_logical_device_configuration(cpu, three)\n"
            "print(len(tf.config.list_logical_devices('CPU')))\n")
    done = processes.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "3"


def test_the_switch_turns_forking_off(monkeypatch):
    monkeypatch.setenv(processes.ENV_SWITCH, "0")
    proc = processes.popen([sys.executable, "-c", "print(1)"], stdout=subprocess.PIPE)
    assert isinstance(proc, subprocess.Popen)
    assert proc.communicate()[0] == b"1\n"
    done = processes.run([sys.executable, "-c", "import sys; sys.exit(4)"])
    assert done.returncode == 4
