"""`python -m stepscope ...` and the `stepscope` console script: the command-line tool.

The CLI is the C++ binary that `pip install .` ships inside the package (stepscope/bin/); in a
build tree it is the one STEPSCOPE_CLI names. The process is replaced by it, so exit codes,
signals, standard input and output are the binary's own.
"""
import os
import sys


def binary():
    """Path of the stepscope binary, or None."""
    shipped = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "stepscope")
    if os.access(shipped, os.X_OK):
        return shipped
    named = os.environ.get("STEPSCOPE_CLI")
    if named and os.access(named, os.X_OK):
        return named
    return None


def main():
    path = binary()
    if path is None:
        sys.stderr.write("stepscope: the command-line binary is not installed with this package "
                         "(reinstall with `pip install .`, or set STEPSCOPE_CLI to the built binary)\n")
        return 2
    os.execv(path, ["stepscope"] + sys.argv[1:])
    return 2  # not reached: execv replaces the process


if __name__ == "__main__":
    sys.exit(main())
