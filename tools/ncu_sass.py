#!/usr/bin/env python3
"""Where a kernel's warps wait, instruction by instruction, from Nsight Compute's source page.

Profile one launch with the sampling sections, then export its machine code with the samples (docs/gpu-runs.md,
"Profiling a kernel"):

    ncu --section SourceCounters --section WarpStateStats -k regex:matmul -c 1 -o rep trireme run ...
    ncu -i rep.ncu-rep --page source --csv --print-source sass > rep.csv

Usage: tools/ncu_sass.py REP.csv [OTHER.csv] [--top N]. For each file: the samples in all, the stall reasons
summed over the kernel, the instructions executed by opcode, and the N instructions with the most samples
(with their two main stall reasons). Two files print one after the other, so an old and a new build, or two
configs, read side by side.
"""
import argparse
import collections
import csv
import sys


def number(text):
    text = (text or "").replace(",", "").strip()
    try:
        return int(float(text))
    except ValueError:
        return 0


def load(path):
    """The header row and the instruction rows of ncu's source-page CSV (its first row names the kernel)."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    for i, row in enumerate(rows):
        if "Address" in row and "Source" in row:
            return rows[i], [r for r in rows[i + 1:] if len(r) == len(rows[i])]
    sys.exit(f"{path}: no source table (was it exported with --page source --csv --print-source sass?)")


def opcode(sass):
    words = sass.split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0].split(".")[0] if words else "?"


def report(path, top):
    head, rows = load(path)
    col = {name: i for i, name in enumerate(head)}
    samples = col.get("Warp Stall Sampling (All Samples)")
    executed = col.get("Instructions Executed")
    if samples is None:
        sys.exit(f"{path}: no stall samples (profile with --section SourceCounters --section WarpStateStats)")
    stalls = [i for i, name in enumerate(head) if name.startswith("stall_") and "Not Issued" not in name]
    total = sum(number(r[samples]) for r in rows)
    by_reason = collections.Counter()
    for r in rows:
        for i in stalls:
            by_reason[head[i]] += number(r[i])
    print(f"== {path}: {total} samples over {len(rows)} instructions")
    print("   stalls: " + ", ".join(f"{k[6:]} {v}" for k, v in by_reason.most_common(8)))
    if executed is not None:
        ops = collections.Counter()
        for r in rows:
            ops[opcode(r[col["Source"]])] += number(r[executed])
        print("   executed: " + ", ".join(f"{k} {v}" for k, v in ops.most_common(10)))
    ranked = sorted(range(len(rows)), key=lambda n: -number(rows[n][samples]))[:top]
    for n in ranked:
        r = rows[n]
        s = number(r[samples])
        reasons = sorted(((number(r[i]), head[i][6:]) for i in stalls), reverse=True)[:2]
        why = ", ".join(f"{name} {v}" for v, name in reasons if v)
        share = 100.0 * s / total if total else 0.0
        print(f"   {n:6d} {s:6d} {share:5.1f}%  {r[col['Source']].strip()[:64]:64s} {why}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", nargs="+", help="ncu --page source --csv --print-source sass output (one or two)")
    ap.add_argument("--top", type=int, default=20, help="instructions listed per file (default 20)")
    args = ap.parse_args()
    for path in args.csv:
        report(path, args.top)


if __name__ == "__main__":
    main()
