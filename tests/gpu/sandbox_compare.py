#!/usr/bin/env python3
"""Compares `kforge run` JSONs of the same workloads taken with different --sandbox modes (docs/sandbox.md):
verdicts and exit codes side by side, and each gated case's kernel median on the metric the gate compares, with
the spread between two runs of the same mode as the noise to judge the difference by.
Usage: sandbox_compare.py LABEL=run.json [LABEL=run.json ...]"""
import json
import sys


def medians(run):
    out = {}
    for w in run["workloads"]:
        out[(w["name"], "verdict")] = w["verify"]["verdict"] + "/" + w.get("outcome", "?")
        for c in w.get("cases", []):
            for i in c.get("impls", []):
                s = i.get(c.get("metric", "cold")) or {}
                if s.get("median_us"):
                    out[(w["name"], c["name"], i["impl"])] = s["median_us"]
    return out


def main():
    runs = [(a.split("=", 1)[0], json.load(open(a.split("=", 1)[1]))) for a in sys.argv[1:]]
    meds = [(label, medians(r)) for label, r in runs]
    for label, r in runs:
        sb = r["env"].get("sandbox", {})
        active = [p["name"] for p in sb.get("protections", []) if p.get("active")]
        print(f"{label}: exit {r['exit_code']}, outcome {r['outcome']}, sandbox {sb.get('mode', '?')} {active}")
    keys = sorted({k for _, m in meds for k in m if len(k) == 2})
    print("\nverdicts:")
    for k in keys:
        print(f"  {k[0]:<28} " + "  ".join(f"{label}={m.get(k, '-')}" for label, m in meds))
    print("\nkernel medians (us) on the compared metric:")
    print(f"  {'workload / case':<60} " + " ".join(f"{label:>9}" for label, _ in meds))
    ratios = {}
    for k in sorted({k for _, m in meds for k in m if len(k) == 3 and k[2] == "kernel"}):
        vals = [m.get(k) for _, m in meds]
        print(f"  {k[0] + ' ' + k[1]:<60} " + " ".join(f"{v:9.2f}" if v else f"{'-':>9}" for v in vals))
        for (la, ma), va in zip(meds, vals):
            for (lb, mb), vb in zip(meds, vals):
                if va and vb and la < lb:
                    ratios.setdefault((la, lb), []).append(vb / va)
    print("\ngeometric mean of the ratio of kernel medians (second / first):")
    for (la, lb), rs in sorted(ratios.items()):
        g = 1.0
        for x in rs:
            g *= x
        g **= 1 / len(rs)
        print(f"  {lb} / {la}: {g:.4f} over {len(rs)} cases (min {min(rs):.3f}, max {max(rs):.3f})")


if __name__ == "__main__":
    main()
