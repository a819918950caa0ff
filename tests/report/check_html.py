#!/usr/bin/env python3
"""Checks a kforge HTML report the way a reviewer opens it: its size, and how long headless Chromium takes to
load it and run its script (#19: at most 2 MB and under 2 s for the seed suite). Also checks that the page
rendered (results rows, the speedup chart) and loads nothing from outside.

Usage: tests/report/check_html.py REPORT.html [--max-bytes N] [--max-seconds S] [--chromium PATH]
Exit 0 when it passes (or when no Chromium is installed: it prints "skipped: no chromium"), 1 when a limit is
exceeded or the page did not render, 2 on a usage error.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

CANDIDATES = ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome", "headless_shell"]

# Runs at the load event (after the report's own script built its table): records when, in the page's clock.
PROBE = ("<script>addEventListener('load',()=>{document.body.setAttribute('data-kf-load-ms',"
         "performance.now().toFixed(1));document.body.setAttribute('data-kf-rows',"
         "document.querySelectorAll('tr.row').length)})</script>")


def find_chromium(given):
    if given:
        return given if shutil.which(given) or os.path.isfile(given) else None
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("html")
    ap.add_argument("--max-bytes", type=int, default=2_000_000)
    ap.add_argument("--max-seconds", type=float, default=2.0)
    ap.add_argument("--chromium", help="the browser binary (default: the first of %s on PATH)" % ", ".join(CANDIDATES))
    a = ap.parse_args()
    if not os.path.isfile(a.html):
        print(f"check_html: {a.html}: no such file", file=sys.stderr)
        return 2
    text = open(a.html, encoding="utf-8").read()
    size = len(text.encode("utf-8"))
    failures = []
    if size > a.max_bytes:
        failures.append(f"{size} bytes, over the {a.max_bytes} allowed")
    if re.search(r'(src|href)="(https?:)?//', text):
        failures.append("loads something from outside the file")
    if "samples_us" in text:
        failures.append("carries raw samples (samples_us)")

    chromium = find_chromium(a.chromium)
    if not chromium:
        print(f"check_html: {a.html}: {size} bytes; skipped: no chromium (load time not measured)"
              + (f"; FAILED: {'; '.join(failures)}" if failures else ""))
        return 1 if failures else 0

    with tempfile.TemporaryDirectory(prefix="kf-check-html-") as tmp:
        probed = os.path.join(tmp, "report.html")
        at = text.rfind("</body>")
        with open(probed, "w", encoding="utf-8") as f:
            f.write(text[:at] + PROBE + text[at:] if at >= 0 else text + PROBE)
        argv = [chromium, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--disable-extensions",
                f"--user-data-dir={os.path.join(tmp, 'profile')}", "--dump-dom", "file://" + probed]
        start = time.monotonic()
        res = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        wall = time.monotonic() - start
    if res.returncode != 0:
        print(f"check_html: {chromium} failed (exit {res.returncode}): {res.stderr[-2000:]}", file=sys.stderr)
        return 1
    load = re.search(r'data-kf-load-ms="([0-9.]+)"', res.stdout)
    rows = re.search(r'data-kf-rows="([0-9]+)"', res.stdout)
    if not load:
        failures.append("the load event never came (the page did not finish loading)")
    elif float(load.group(1)) > a.max_seconds * 1000:
        failures.append(f"loaded in {float(load.group(1)) / 1000:.2f} s, over the {a.max_seconds} s allowed")
    if not rows or int(rows.group(1)) == 0:
        failures.append("the results table has no rows (its script did not run)")
    if "<svg" in text and 'id="speedups"' not in res.stdout:
        failures.append("the speedup chart is not in the rendered page")
    load_s = float(load.group(1)) / 1000 if load else float("nan")
    print(f"check_html: {a.html}: {size} bytes, loaded in {load_s:.2f} s ({wall:.2f} s with Chromium's start), "
          f"{rows.group(1) if rows else 0} rows; {'FAILED: ' + '; '.join(failures) if failures else 'ok'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
