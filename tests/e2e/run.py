#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""End-to-end test harness: the real ankusad in a temp dir per test.

usage: tests/e2e/run.py [--build DIR] [--timeout S] [--keep] [--list] [FILTER...]

Finds the test_* functions of tests/e2e/test_*.py, runs those whose name
contains one of the FILTER substrings (all without a filter), each under a
watchdog (default 120 s, or the function's `timeout` attribute), and prints

    PASS name (1.2s)
    FAIL name: reason          (then the tail of each daemon's stderr log)
    SKIP name: reason          (it cannot run here: no root, a tool missing)

ending with every skip again (`SKIP name: reason`, after a line `e2e: N
skipped:`) and the totals `e2e: N passed, N failed, N skipped`; a skip is
never counted as passed.  Exit status 1 if any test failed.  The build dir (holding ankusad, ankusactl, ankusa-edge) comes from
--build, else $ANKUSA_BUILD, else the source root.  Every daemon a test
started is killed when the test ends, however it ends.
"""

import argparse
import importlib
import os
import sys
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import ankusa  # noqa: E402


def discover():
    tests = []
    # The loss test is the longest: last.
    for fn in sorted(os.listdir(HERE), key=lambda f: (f == "test_loss.py",
                                                      f)):
        if not (fn.startswith("test_") and fn.endswith(".py")):
            continue
        mod = importlib.import_module(fn[:-3])
        # In the order they are written in the file.
        funcs = [(getattr(f, "__code__").co_firstlineno, n, f)
                 for n, f in vars(mod).items()
                 if n.startswith("test_") and callable(f)
                 and getattr(f, "__module__", None) == mod.__name__]
        for _, n, f in sorted(funcs, key=lambda t: t[0]):
            tests.append(("%s.%s" % (fn[:-3], n), n, f))
    return tests


def reason_of(exc):
    if isinstance(exc, AssertionError):
        msg = str(exc) or "assertion failed"
        tb = traceback.extract_tb(exc.__traceback__)
        where = next((fr for fr in reversed(tb)
                      if os.path.basename(fr.filename).startswith("test_")),
                     None)
        if where is not None:
            msg = "%s [%s:%d]" % (msg, os.path.basename(where.filename),
                                  where.lineno)
        return msg
    return "".join(traceback.format_exception_only(type(exc), exc)).strip() \
        + "\n" + "".join(traceback.format_tb(exc.__traceback__)[-3:])


def run_one(full, func, timeout, keep):
    ctx = ankusa.begin_test(func.__name__)
    box = {}

    def body():
        try:
            func()
            box["ok"] = True
        except ankusa.Skip as e:
            box["skip"] = str(e)
        except BaseException as e:      # noqa: BLE001 - report everything
            box["exc"] = e

    t0 = time.monotonic()
    th = threading.Thread(target=body, name=full, daemon=True)
    th.start()
    th.join(timeout)
    dt = time.monotonic() - t0
    if th.is_alive():
        tails = ankusa.log_tails()
        ankusa.kill_all()
        th.join(10)
        # Whatever the test thread raised after the kill is not the news.
        box = {"exc": AssertionError("timed out after %.0fs (watchdog; "
                                     "its daemons killed)" % timeout)}
    else:
        tails = ankusa.log_tails()
    failed = "exc" in box
    ankusa.end_test(keep=keep or failed)
    if "skip" in box:
        print("SKIP %s: %s" % (full, box["skip"]), flush=True)
        return "skip", box["skip"]
    if not failed:
        print("PASS %s (%.1fs)" % (full, dt), flush=True)
        for n in ctx.notes:
            print("     %s" % n)
        return "pass", None
    print("FAIL %s: %s" % (full, reason_of(box["exc"])), flush=True)
    for n in ctx.notes:
        print("     %s" % n)
    for path, text in tails:
        print("     --- %s (tail)" % path)
        for l in text.splitlines():
            print("     | %s" % l)
    print("     (temp dir kept: %s)" % ctx.tmp, flush=True)
    return "fail", None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.environ.get("ANKUSA_BUILD",
                                                      ankusa.SRCDIR))
    ap.add_argument("--timeout", type=float, default=None,
                    help="per-test watchdog in seconds (default 120, or "
                    "the test's own)")
    ap.add_argument("--keep", action="store_true",
                    help="keep every test's temp dir")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("filter", nargs="*")
    a = ap.parse_args()

    ankusa.configure(a.build)
    tests = discover()
    if a.filter:
        tests = [t for t in tests if any(f in t[0] for f in a.filter)]
    if a.list:
        for full, _, _ in tests:
            print(full)
        return 0
    missing = [b for b in ("ankusad", "ankusactl", "ankusa-edge")
               if not os.access(ankusa.binary(b), os.X_OK)]
    if missing:
        print("e2e: %s not found in %s (use --build DIR or ANKUSA_BUILD)"
              % (", ".join(missing), ankusa.BUILD), file=sys.stderr)
        print("e2e: 0 passed, %d failed, 0 skipped" % len(tests))
        return 1

    counts = {"pass": 0, "fail": 0, "skip": 0}
    skips = []
    try:
        for full, _, func in tests:
            timeout = a.timeout or getattr(func, "timeout", 120)
            verdict, why = run_one(full, func, timeout, a.keep)
            counts[verdict] += 1
            if verdict == "skip":
                skips.append((full, why))
    except KeyboardInterrupt:
        ankusa.kill_all()
        ankusa.end_test(keep=True)
        print("e2e: interrupted")
        counts["fail"] += 1
    if skips:
        print("e2e: %d skipped:" % len(skips))
        for full, why in skips:
            print("SKIP %s: %s" % (full, why))
    print("e2e: %d passed, %d failed, %d skipped" % (
        counts["pass"], counts["fail"], counts["skip"]))
    return 1 if counts["fail"] else 0


if __name__ == "__main__":
    sys.exit(main())
