"""The zsh completion function: it parses (zsh -n), compinit binds it to stepscope, and Tab in an
interactive zsh offers the commands, options and files that `--help` says (zsh_complete.zsh
presses Tab in a pseudo-terminal and reads back every match the completion adds)."""
import os
import shutil
import subprocess
import tempfile
import unittest

import cli_help

SOURCE, BUILD, _ = cli_help.env()
FUNCTION_DIR = os.path.join(BUILD, "clidoc", "zsh")
DRIVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "zsh_complete.zsh")


def complete(line, cwd):
    out = subprocess.run(["zsh", "-f", DRIVER, FUNCTION_DIR, line], cwd=cwd, capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise AssertionError(f"{line!r}: exit {out.returncode}: {out.stderr}")
    return set(filter(None, out.stdout.split("\n")))


@unittest.skipUnless(shutil.which("zsh"), "zsh is not installed (scripts/install-deps installs it)")
class ZshCompletionTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tree = cli_help.command_tree(os.path.join(BUILD, "stepscope"))
        cls.dir = tempfile.mkdtemp(prefix="stepscope-zsh-")
        for name in ("rank0.json", "rank1.json.gz"):
            open(os.path.join(cls.dir, name), "w").close()
        os.mkdir(os.path.join(cls.dir, "runs"))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def check(self, line, expected):
        with self.subTest(line=line):
            self.assertEqual(set(expected), complete(line, self.dir))

    def test_syntax(self):
        out = subprocess.run(["zsh", "-n", os.path.join(FUNCTION_DIR, "_stepscope")], capture_output=True, text=True)
        self.assertEqual(0, out.returncode, out.stderr)

    def test_compinit_binds_it(self):
        out = subprocess.run(["zsh", "-fc", f"fpath=({FUNCTION_DIR} $fpath); autoload -U compinit; compinit -u -D; "
                              "print -r -- $_comps[stepscope]"], capture_output=True, text=True, timeout=60)
        self.assertEqual("_stepscope", out.stdout.strip(), out.stderr)

    def test_commands(self):
        self.check("stepscope an", ["analyze"])
        self.check("stepscope ", self.tree[()].subcommands)
        self.check("stepscope plan ", self.tree[("plan",)].subcommands)
        self.check("stepscope plan me", ["memory"])
        self.check("stepscope --config x.toml di", ["diff"])

    def test_options(self):
        self.check("stepscope analyze --js", ["--json"])
        self.check("stepscope plan memory --gp", ["--gpu", "--gpus"])
        self.check("stepscope analyze -j 2 --wi", ["--wide"])

    def test_every_option_of_the_help_completes(self):
        globals_ = cli_help.global_options(self.tree)
        for path, cmd in self.tree.items():
            if cmd.subcommands:
                continue  # a command word is due there, not an option
            line = " ".join(("stepscope",) + path + ("-",))
            with self.subTest(line=line):
                # watch's COMMAND may start there too, and zsh's own precommand "-" is one.
                offered = complete(line, self.dir) - {"-"}
                self.assertEqual(set(cmd.options) | set(globals_), offered)

    def test_files(self):
        self.check("stepscope analyze ra", ["rank0.json", "rank1.json.gz"])
        self.check("stepscope analyze --json=ra", ["rank0.json", "rank1.json.gz"])
        self.check("stepscope analyze --csv ", ["runs"])
        self.check("stepscope diff rank0.json ra", ["rank0.json", "rank1.json.gz"])
        self.check("stepscope analyze --top ", [])

    def test_watch_completes_the_command_to_start(self):
        self.assertIn("zsh", complete("stepscope watch -- zs", self.dir))
        self.assertIn("zsh", complete("stepscope watch --pid 1 -- zs", self.dir))


if __name__ == "__main__":
    unittest.main(verbosity=2)
