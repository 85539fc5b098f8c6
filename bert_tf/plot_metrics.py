"""Plot the loss, accuracy and learning-rate curves of training runs into a PNG.

  python -m bert_tf.plot_metrics OUTPUT_DIR [OUTPUT_DIR ...] [--output curves.png]

OUTPUT_DIR: the --output_dir of run_pretraining.py, run_classifier.py, run_squad.py, ... (or of
google-research/bert's scripts); one row of panels per folder. The PNG goes to --output
(default: OUTPUT_DIR/training_curves.png of the first folder) and its path is printed.
"""

import argparse
import os
import sys


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bert_tf.plot_metrics", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dirs", nargs="+", metavar="OUTPUT_DIR",
                        help="output folders holding TensorBoard event files")
    parser.add_argument("--output", help="PNG to write (default: "
                                         "<first OUTPUT_DIR>/training_curves.png)")
    parser.add_argument("--title", help="figure title")
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    from bert_tf.plots import plot_runs
    output = args.output or os.path.join(args.run_dirs[0], "training_curves.png")
    try:
        result = plot_runs(args.run_dirs, output, title=args.title)
    except (FileNotFoundError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    for run_dir, panels in result["runs"].items():
        print(f"{run_dir}: " + ", ".join(f"{n} {panel} curve(s)" for panel, n in panels.items()))
    print(f"wrote {result['path']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
