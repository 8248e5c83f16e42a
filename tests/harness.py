"""harness.py -- what the Python test scripts share (tests/client/test_cli.py,
tests/service/test_firstrun.py): named checks that keep going after a
failure, and the main that runs one subcommand per ctest test.
"""
import shutil
import sys
import traceback

failures = []


def check(cond, what):
    """Print ok/FAIL and the claim; remember a failure, carry on."""
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def main(tests, cmd, tmp):
    """Run tests[cmd]; a crash is a failure with its reason; tmp is removed;
    exit 1 if any check failed."""
    try:
        tests[cmd]()
    except Exception as e:
        traceback.print_exc()
        failures.append(repr(e))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print(f"{len(failures)} check(s) failed", flush=True)
        sys.exit(1)
