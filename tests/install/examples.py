"""The documented command lines, found and run.

Where they come from: every line of a ```sh block (also shell, bash, console) in README.md and
docs/*.md that runs `stepscope` (at its start, or after `|` or `;`), and the lines under
"Examples:" at the end of each command's --help.

The rule for running them (README.md, "Examples in this README" says the same):
- each runs in bash, in a fresh scratch directory where the names the docs give traces stand for
  the example trace that ships in examples/ (TRACES and RUN_DIRS below), with the built
  `stepscope` first on PATH;
- it must exit 0, or N when its comment says `expect exit N`;
- `watch` needs a live process, `triage` logs recorded on a GPU host and `serve` runs until
  stopped (LIVE below), and a block right after `<!-- not run: REASON -->` needs something else that is not here: those are
  not run, but every command and option they name must still be one `--help` lists.
"""
import glob
import os
import re
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass

EXAMPLE_TRACE = os.path.join("examples", "cpu_training_step.pt.trace.json.gz")

# Names the examples give traces (one rank each; "r0.json" holds gzip bytes like the others, as
# the reader goes by the content) and runs (a directory of rank traces).
TRACES = ["TRACE.json.gz", "trace.json.gz", "trace.json", "t.json.gz", "base.json.gz", "test.json.gz",
          "r0.json", "r1.json", "r1.json.gz", "a0.json", "a1.json"]
RUN_DIRS = ["tb_logs", "before", "after"]

# Commands whose examples need what a test machine does not have.
LIVE = {"watch": "attaches to a live process", "triage": "reads logs recorded on a GPU host",
        "serve": "serves until stopped"}

SHELL_BLOCKS = ("sh", "shell", "bash", "console")
NOT_RUN = re.compile(r"<!--\s*not run:\s*(.*?)\s*-->")


@dataclass
class Example:
    where: str               # "README.md:31" or "stepscope analyze --help"
    line: str
    not_run: str = ""        # why it is not run, when it is not


def invokes_stepscope(line):
    return any(seg.split()[:1] == ["stepscope"] for seg in re.split(r"[|;]|&&", line))


def doc_examples(source):
    files = [os.path.join(source, "README.md")] + sorted(glob.glob(os.path.join(source, "docs", "*.md")))
    out = []
    for path in files:
        rel = os.path.relpath(path, source)
        lines = open(path, encoding="utf-8").read().split("\n")
        i = 0
        while i < len(lines):
            fence = re.match(r"^```(\w*)\s*$", lines[i])
            if not fence:
                i += 1
                continue
            marker = NOT_RUN.search(lines[i - 1]) if i > 0 else None
            end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
            if fence.group(1) in SHELL_BLOCKS:
                for k, line in joined(lines[i + 1:end], i + 2):
                    if invokes_stepscope(line):
                        out.append(Example(f"{rel}:{k}", line, marker.group(1) if marker else ""))
            i = end + 1
    return out


def joined(lines, first_number):
    """The block's command lines, a line ending in a backslash joined to the next."""
    pending, start = "", first_number
    for n, line in enumerate(lines, first_number):
        if not pending:
            start = n
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        yield start, (pending + line).strip()
        pending = ""


def help_examples(tree):
    seen, out = set(), []
    for path, cmd in tree.items():
        for line in cmd.examples:
            if line not in seen and invokes_stepscope(line):
                seen.add(line)
                out.append(Example(" ".join(("stepscope",) + path + ("--help",)), line))
    return out


def stepscope_calls(line):
    """The argument lists of each stepscope in the line: ['analyze', 't.json.gz', '--json', ...]."""
    lex = shlex.shlex(line, posix=True, punctuation_chars=True)
    lex.whitespace_split = True
    calls, current = [], None
    for tok in lex:
        if tok in ("|", ";", "&&", "||", "&"):
            current = None
        elif current is None and tok == "stepscope":
            current = []
            calls.append(current)
        elif current is not None and re.fullmatch(r"[<>]+", tok):
            current = None  # a redirection: the rest is not its arguments
        elif current is not None:
            current.append(tok)
    return calls


def unknown_names(line, tree, global_options):
    """The commands and options the line gives stepscope that its --help does not list."""
    problems = []
    for args in stepscope_calls(line):
        path, i = (), 0
        while i < len(args) and not args[i].startswith("-") and args[i] in tree[path].subcommands:
            path += (args[i],)
            i += 1
        cmd = tree[path]
        if cmd.subcommands and not any(a in ("-h", "--help", "--version") for a in args):
            problems.append(f"'{' '.join(args[:i + 1])}' names no command of stepscope {' '.join(path)}".rstrip())
            continue
        known = set(cmd.options) | set(global_options)
        for arg in args[i:]:
            if arg == "--":
                break
            if arg.startswith("-") and arg != "-" and not re.fullmatch(r"-\d.*", arg):
                name = arg.split("=", 1)[0]
                if name not in known:
                    problems.append(f"stepscope {' '.join(path)}: no option {name}")
    return problems


def why_not_run(example):
    if example.not_run:
        return example.not_run
    for args in stepscope_calls(example.line):
        if args and args[0] in LIVE:
            return f"{args[0]} {LIVE[args[0]]}"
    return ""


def expected_exit(line):
    m = re.search(r"#.*\bexpect exit (\d+)", line)
    return int(m.group(1)) if m else 0


def workspace(source):
    """A scratch directory holding the traces and runs the examples name."""
    root = tempfile.mkdtemp(prefix="stepscope-examples-")
    trace = os.path.join(source, EXAMPLE_TRACE)
    for name in TRACES:
        shutil.copyfile(trace, os.path.join(root, name))
    for run in RUN_DIRS:
        os.mkdir(os.path.join(root, run))
        for rank in (0, 1):
            shutil.copyfile(trace, os.path.join(root, run, f"rank-{rank}.pt.trace.json.gz"))
    return root


# Options whose value is a file or directory the command writes ("-": standard output).
OUTPUT_OPTIONS = ("--json", "--html", "--annotate", "--csv")


def promised_outputs(line):
    """The files and directories the line asks stepscope to write."""
    out = []
    for args in stepscope_calls(line):
        for i, arg in enumerate(args):
            name, eq, value = arg.partition("=")
            if name not in OUTPUT_OPTIONS:
                continue
            if not eq:
                value = args[i + 1] if i + 1 < len(args) and not args[i + 1].startswith("-") else "-"
            if value != "-":
                out.append(value)
    return out


def run(example, source, build):
    """Runs the example in a fresh workspace; returns (exit status, output, outputs it did not write)."""
    root = workspace(source)
    try:
        env = dict(os.environ, PATH=build + os.pathsep + os.environ.get("PATH", ""), NO_COLOR="1")
        out = subprocess.run(["bash", "--norc", "--noprofile", "-o", "pipefail", "-c", example.line], cwd=root, env=env,
                             stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300)
        missing = [p for p in promised_outputs(example.line) if not os.path.exists(os.path.join(root, p))]
        return out.returncode, out.stdout[-2000:] + out.stderr[-2000:], missing
    finally:
        shutil.rmtree(root, ignore_errors=True)



class ExampleChecks:
    """The checks every list of examples gets. A test class sets `tree` (cli_help.command_tree) and
    `examples` in setUpClass and lists this before unittest.TestCase among its bases."""

    def test_examples_name_real_commands_and_options(self):
        import cli_help
        globals_ = cli_help.global_options(self.tree)
        for e in self.examples:
            with self.subTest(where=e.where, line=e.line):
                self.assertEqual([], unknown_names(e.line, self.tree, globals_))

    def test_examples_run(self):
        import cli_help
        source, build, _ = cli_help.env()
        for e in self.examples:
            with self.subTest(where=e.where, line=e.line):
                reason = why_not_run(e)
                if reason:
                    print(f"not run: {e.where}: {e.line}  ({reason})")
                    continue
                rc, output, missing = run(e, source, build)
                self.assertEqual(expected_exit(e.line), rc, output)
                if rc == 0:
                    self.assertEqual([], missing, "outputs it names were not written")
