"""The bash completion script, sourced in bash as bash-completion would load it: the function is
called the way readline calls it, and the candidates are compared with what `--help` lists.
Each case runs twice, in a bare bash and with bash-completion loaded (its _filedir does the
file names then)."""
import os
import shlex
import shutil
import subprocess
import tempfile
import unittest

import cli_help

SOURCE, BUILD, _ = cli_help.env()
SCRIPT = os.path.join(BUILD, "clidoc", "bash", "stepscope")
BASH_COMPLETION = "/usr/share/bash-completion/bash_completion"


def complete(words, cwd, with_bash_completion):
    """The candidates for the last of `words` (the word under the cursor, maybe empty)."""
    setup = f"source {shlex.quote(BASH_COMPLETION)}\n" if with_bash_completion else ""
    script = (
        f"{setup}source {shlex.quote(SCRIPT)}\n"
        f"COMP_WORDS=({' '.join(shlex.quote(w) for w in words)})\n"
        "COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))\n"
        'COMP_LINE="${COMP_WORDS[*]}"\nCOMP_POINT=${#COMP_LINE}\n'
        "COMPREPLY=()\n"
        '_stepscope stepscope "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"\n'
        "printf '%s\\n' \"${COMPREPLY[@]}\"\n")
    out = subprocess.run(["bash", "--norc", "--noprofile", "-c", script], cwd=cwd, capture_output=True, text=True, timeout=60)
    if out.returncode != 0 or out.stderr:
        raise AssertionError(f"{words}: exit {out.returncode}: {out.stderr}")
    return set(filter(None, out.stdout.split("\n")))


class BashCompletionTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tree = cli_help.command_tree(os.path.join(BUILD, "stepscope"))
        cls.dir = tempfile.mkdtemp(prefix="stepscope-bash-")
        for name in ("rank0.json", "rank1.json.gz", "with space.json"):
            open(os.path.join(cls.dir, name), "w").close()
        os.mkdir(os.path.join(cls.dir, "runs"))
        cls.modes = [False] + ([True] if os.path.isfile(BASH_COMPLETION) else [])
        if not os.path.isfile(BASH_COMPLETION):
            print("bash-completion is not installed: only the bare bash is tried")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def check(self, words, expected):
        for mode in self.modes:
            with self.subTest(words=" ".join(words), bash_completion=mode):
                self.assertEqual(set(expected), complete(words, self.dir, mode))

    def test_the_script_registers_its_function(self):
        out = subprocess.run(["bash", "--norc", "-c", f"source {shlex.quote(SCRIPT)}; complete -p stepscope"],
                             capture_output=True, text=True, timeout=30)
        self.assertEqual("complete -F _stepscope stepscope", out.stdout.strip(), out.stderr)

    def test_commands(self):
        self.check(["stepscope", "an"], ["analyze"])
        self.check(["stepscope", ""], self.tree[()].subcommands)
        self.check(["stepscope", "plan", "me"], ["memory"])
        self.check(["stepscope", "plan", ""], self.tree[("plan",)].subcommands)
        # A global option and its value before the command do not hide it.
        self.check(["stepscope", "--config", "x.toml", "di"], ["diff"])

    def test_options(self):
        self.check(["stepscope", "analyze", "--js"], ["--json"])
        self.check(["stepscope", "plan", "memory", "--gp"], ["--gpu", "--gpus"])
        self.check(["stepscope", "analyze", "t.json", "--ver"], ["--verbose"])

    def test_every_option_of_the_help_completes(self):
        globals_ = cli_help.global_options(self.tree)
        for path, cmd in self.tree.items():
            expected = set(cmd.options) | (set(globals_) if path else set())
            # Only the bare bash: bash-completion changes nothing here, and this runs many cases.
            with self.subTest(command=" ".join(path)):
                self.assertEqual(expected, complete(["stepscope", *path, "-"], self.dir, False))

    def test_trace_arguments_complete_files(self):
        files = {"rank0.json", "rank1.json.gz", "with space.json", "runs"}
        self.check(["stepscope", "analyze", ""], files)
        self.check(["stepscope", "analyze", "ra"], {"rank0.json", "rank1.json.gz"})
        self.check(["stepscope", "analyze", "rank0.json", "w"], {"with space.json"})
        self.check(["stepscope", "diff", "rank0.json", ""], files)
        self.check(["stepscope", "diff", "--base", "ra"], {"rank0.json", "rank1.json.gz"})
        self.check(["stepscope", "triage", "ra"], {"rank0.json", "rank1.json.gz"})

    def test_option_values(self):
        self.check(["stepscope", "analyze", "--json", "ra"], {"rank0.json", "rank1.json.gz"})
        self.check(["stepscope", "analyze", "--csv", ""], {"runs"})  # a directory
        self.check(["stepscope", "analyze", "--top", ""], [])      # a number: nothing to offer
        self.check(["stepscope", "analyze", "--top", "5", "ra"], {"rank0.json", "rank1.json.gz"})
        # bash splits "--json=ra" at the '=' into three words.
        self.check(["stepscope", "analyze", "--json", "=", "ra"], {"rank0.json", "rank1.json.gz"})
        self.check(["stepscope", "analyze", "--json", "="], {"rank0.json", "rank1.json.gz", "with space.json", "runs"})
        self.check(["stepscope", "analyze", "--json", "=", "out.json", "--qu"], ["--quiet"])

    def test_watch_completes_the_command_to_start(self):
        self.assertIn("bash", complete(["stepscope", "watch", "--", "bas"], self.dir, False))
        self.check(["stepscope", "watch", "--seconds", "5", "--", "python3", "ra"], {"rank0.json", "rank1.json.gz"})


if __name__ == "__main__":
    unittest.main(verbosity=2)
