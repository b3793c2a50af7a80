"""The one place Python and shell tests decide what a missing ../shared file means.

The C++ twin is tests/testing/shared_files.h; the rule is the same:
- ../shared absent: the check is skipped and says why (exit code 77 = ctest "skipped");
- ../shared present but the file missing: the test fails, so a CI run with ../shared beside
  it can never pass by skipping the comparisons it exists to make.

Shell tests call it as a program: `python3 tests/testing/shared_files.py SHARED_DIR FILE`
exits 0 (present), 77 (skip) or 1 (fail) and prints the reason.
"""
import os
import sys

SKIP = 77  # ctest SKIP_RETURN_CODE
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def shared_dir(explicit=None):
    """TEXTGEN_SHARED_DIR (or the given directory), else ../shared next to the checkout."""
    return explicit or os.environ.get("TEXTGEN_SHARED_DIR") or os.path.join(REPO, "..", "shared")


def shared_dir_present(explicit=None):
    return os.path.isdir(os.path.join(shared_dir(explicit), "models"))


class SharedFileMissing(Exception):
    """../shared is present but lacks a file a test needs: a failure, never a skip."""


def require_shared_file(path, explicit_shared=None):
    """True when `path` exists. False (after printing why) when ../shared is absent.
    Raises SharedFileMissing when ../shared is present but `path` is not in it."""
    if os.path.exists(path):
        return True
    if shared_dir_present(explicit_shared):
        raise SharedFileMissing(f"../shared is present at {shared_dir(explicit_shared)} but lacks {path}")
    print(f"SKIP: needs {path}: ../shared is absent (set TEXTGEN_SHARED_DIR to the shared/ directory)")
    return False


def main(argv):
    if len(argv) != 3:
        print("usage: shared_files.py SHARED_DIR FILE", file=sys.stderr)
        return 2
    try:
        return 0 if require_shared_file(argv[2], argv[1]) else SKIP
    except SharedFileMissing as e:
        print(f"FAIL: {e}")
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
