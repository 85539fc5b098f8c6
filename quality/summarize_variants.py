#!/usr/bin/env python3
"""Per-variant table of a quality/classifier_variants.py results file: each seed's value of the
experiment's metric, their mean, and the spread (max - min) over seeds, plus seed-paired
differences against a baseline variant.

  python3 quality/summarize_variants.py quality/results/long_text.jsonl --baseline truncate
"""

import argparse
import collections
import json


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results")
    parser.add_argument("--baseline", required=True)
    parser.add_argument("--keys", default="", help="more eval keys to average, comma-separated")
    parser.add_argument("--commit", default="",
                        help="only rows run at commits starting with this (default: all)")
    args = parser.parse_args()
    with open(args.results, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    rows = [row for row in rows if row["commit"].startswith(args.commit)]
    by_variant = collections.defaultdict(dict)
    for row in rows:
        by_variant[row["variant"]][row["seed"]] = row
    metric = rows[0]["metric"]
    seeds = sorted({row["seed"] for row in rows})
    extra = [k for k in args.keys.split(",") if k]
    print(f"| variant | {metric} per seed ({', '.join(map(str, seeds))}) | mean | spread "
          f"| paired difference vs {args.baseline} (min .. max) |"
          + "".join(f" mean {k} |" for k in extra))
    print("|---|---|---|---|---|" + "---|" * len(extra))
    base = by_variant[args.baseline]
    for variant, runs in by_variant.items():
        values = [runs[s]["value"] * 100 for s in seeds if s in runs]
        diffs = [(runs[s]["value"] - base[s]["value"]) * 100 for s in seeds
                 if s in runs and s in base]
        cells = ", ".join(f"{v:.2f}" for v in values)
        diff = (f"{sum(diffs) / len(diffs):+.2f} ({min(diffs):+.2f} .. {max(diffs):+.2f})"
                if variant != args.baseline and diffs else "")
        more = "".join(
            f" {sum(runs[s]['eval'][k] for s in runs) / len(runs) * 100:.2f} |" for k in extra)
        print(f"| {variant} | {cells} | {sum(values) / len(values):.2f} | "
              f"{max(values) - min(values):.2f} | {diff} |" + more)
    print()
    print("commits:", ", ".join(sorted({row["commit"][:12] for row in rows})))


if __name__ == "__main__":
    main()
