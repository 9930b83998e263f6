"""What `stepscope ... --help` says, read back from the help text alone: the tests compare the man
pages, the completions and the documented examples with it, so none of them is checked against
the generator that wrote it."""
import os
import re
import subprocess
from dataclasses import dataclass, field


@dataclass
class Command:
    path: tuple                                        # ("plan", "memory"); () for the program
    subcommands: list = field(default_factory=list)
    options: list = field(default_factory=list)        # every name: "-j", "--jobs", ...
    valued: set = field(default_factory=set)           # the names of options that take a value
    positionals: list = field(default_factory=list)
    examples: list = field(default_factory=list)       # the command lines under "Examples:"


def env():
    """The variables every test reads: where the source, the build and the shared fixtures are."""
    return (os.path.abspath(os.environ["STEPSCOPE_SOURCE_DIR"]), os.path.abspath(os.environ["STEPSCOPE_BINARY_DIR"]),
            os.environ.get("STEPSCOPE_SHARED_DIR", ""))


def help_text(binary, path):
    out = subprocess.run([binary, *path, "--help"], capture_output=True, text=True, timeout=30)
    if out.returncode != 0:
        raise AssertionError(f"{' '.join(path)} --help exited {out.returncode}: {out.stderr}")
    return out.stdout


def parse_help(text, path):
    cmd = Command(tuple(path))
    section = None
    for line in text.splitlines():
        if re.match(r"^\S.*:$", line):  # "Options:", "Subcommands:", "Examples:", "Record on ..., e.g.:"
            section = line[:-1]
            continue
        if not line.strip():
            continue
        if not line.startswith("  ") or line.startswith("   "):
            continue  # text, or a description continued under its item
        first = line.split()[0]
        if section == "Options":
            names = first.split(",")
            cmd.options += names
            # "--config FILE=stepscope.toml", "-j,--jobs INT:NUMBER >= 0": a second word is its value.
            rest = line[2 + len(first):]
            if rest.startswith(" ") and not rest.startswith("   ") and rest.strip():
                cmd.valued.update(names)
        elif section == "Subcommands":
            cmd.subcommands.append(first)
        elif section == "Positionals":
            cmd.positionals.append(first)
        elif section in ("Examples", "Example"):
            cmd.examples.append(line.strip())
    return cmd


def command_tree(binary):
    """Every command, parents first, as its help lists them."""
    commands, todo = {}, [()]
    while todo:
        path = todo.pop(0)
        cmd = parse_help(help_text(binary, path), path)
        commands[path] = cmd
        todo += [path + (s,) for s in cmd.subcommands]
    return commands


def global_options(tree):
    """The program's options that every command takes too (CLI11 passes them up): --config."""
    return [o for o in tree[()].options if o not in ("-h", "--help", "--version")]
