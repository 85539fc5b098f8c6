"""python -m bert_tf.quickstart [--output_dir=quickstart_out] [--smoke] [--verbose]

Runs the whole pipeline (see bert_tf/quickstart/pipeline.py); a rerun reuses finished stages.
"""

import argparse
import os
import signal
import sys


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bert_tf.quickstart", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output_dir", default="quickstart_out",
                        help="where every stage writes (default: %(default)s)")
    parser.add_argument("--smoke", action="store_true",
                        help="a tiny run of every stage (a test, not a model)")
    parser.add_argument("--verbose", action="store_true",
                        help="show the commands' full output, not only progress and results")
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    # SIGTERM unwinds like Ctrl-C, so a running stage is stopped cleanly (and resumed by a rerun).
    signal.signal(signal.SIGTERM, _interrupt)
    from bert_tf.quickstart.pipeline import SMOKE, Pipeline, Settings
    pipeline = Pipeline(args.output_dir, SMOKE if args.smoke else Settings(), args.verbose)
    try:
        pipeline.run_all()
    except KeyboardInterrupt:
        return 130
    return 0


def _interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


if __name__ == "__main__":
    sys.exit(main())
