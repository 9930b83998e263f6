"""`cmake --install` into a temporary prefix: the binary, a man page per command and the shell
completions land where man, bash-completion and zsh look; the installed binary runs; the pages
pass groff's and mandoc's checks, render with man, and name every command, option and argument
that `stepscope ... --help` lists."""
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import cli_help

SOURCE, BUILD, _ = cli_help.env()


def page_file(path):
    return "-".join(("stepscope",) + path) + ".1"


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, **kw)


def install(prefix, destdir=None):
    env = dict(os.environ)
    env.pop("DESTDIR", None)
    if destdir:
        env["DESTDIR"] = destdir
    out = run(["cmake", "--install", BUILD, "--prefix", prefix], env=env)
    if out.returncode != 0:
        raise AssertionError(f"cmake --install failed:\n{out.stdout}{out.stderr}")


def rendered(page):
    """The page as man shows it, plain text, one paragraph to a line (no wrapping to break names)."""
    env = dict(os.environ, MANWIDTH="1000", LC_ALL="C.UTF-8", MAN_KEEP_FORMATTING="")
    out = run(["man", "-l", page], env=env)
    if out.returncode != 0 or not out.stdout.strip():
        raise AssertionError(f"man -l {page} exited {out.returncode}: {out.stderr}")
    return out.stdout


def item_heads(text):
    """The names that items of a rendered page start with ("-j, --jobs INT" gives -j and --jobs;
    "TRACE..." gives TRACE): an item's tag sits at the section's indent, before its text."""
    names = set()
    for tag in re.findall(r"^ {7}(\S.*?)(?: {2,}|$)", text, re.M):
        for part in tag.split(", "):
            names.add(part.split(" ")[0].rstrip("."))
    return names


class InstallTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="stepscope-install-")
        cls.prefix = os.path.join(cls.tmp, "prefix")
        install(cls.prefix)
        cls.tree = cli_help.command_tree(os.path.join(BUILD, "stepscope"))
        cls.man1 = os.path.join(cls.prefix, "share", "man", "man1")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_files_land_where_man_and_the_shells_look(self):
        binary = os.path.join(self.prefix, "bin", "stepscope")
        self.assertTrue(os.access(binary, os.X_OK), binary)
        for rel in ("share/bash-completion/completions/stepscope", "share/zsh/site-functions/_stepscope"):
            self.assertTrue(os.path.isfile(os.path.join(self.prefix, rel)), rel)
        expected = {page_file(path) for path in self.tree}
        self.assertEqual(expected, set(os.listdir(self.man1)))

    def test_installed_files_are_the_generated_ones(self):
        generated = os.path.join(BUILD, "clidoc")
        pairs = [(os.path.join(generated, "bash", "stepscope"), "share/bash-completion/completions/stepscope"),
                 (os.path.join(generated, "zsh", "_stepscope"), "share/zsh/site-functions/_stepscope")]
        pairs += [(os.path.join(generated, "man1", f), os.path.join("share/man/man1", f)) for f in os.listdir(self.man1)]
        for built, rel in pairs:
            with open(built, "rb") as a, open(os.path.join(self.prefix, rel), "rb") as b:
                self.assertEqual(a.read(), b.read(), rel)

    def test_installed_binary_runs(self):
        binary = os.path.join(self.prefix, "bin", "stepscope")
        out = run([binary, "--help"])
        self.assertEqual(0, out.returncode, out.stderr)
        self.assertIn("Usage: stepscope", out.stdout)
        out = run([binary, "--version"])
        self.assertEqual(0, out.returncode, out.stderr)
        self.assertRegex(out.stdout, r"^stepscope \d+\.\d+")

    def test_destdir_is_put_before_the_prefix(self):
        stage = os.path.join(self.tmp, "stage")
        install("/usr/local", destdir=stage)
        for rel in ("bin/stepscope", "share/man/man1/stepscope.1", "share/man/man1/stepscope-analyze.1",
                    "share/bash-completion/completions/stepscope", "share/zsh/site-functions/_stepscope"):
            self.assertTrue(os.path.isfile(os.path.join(stage, "usr/local", rel)), rel)

    @unittest.skipUnless(os.path.isfile("/usr/share/bash-completion/bash_completion"), "bash-completion is not installed")
    def test_bash_completion_loads_the_installed_script_on_first_use(self):
        # bash-completion looks under each of XDG_DATA_DIRS (/usr/local/share:/usr/share when
        # unset), so the default prefix needs nothing and another needs PREFIX/share there.
        load = ("source /usr/share/bash-completion/bash_completion; "
                "__load_completion stepscope && complete -p stepscope")
        env = dict(os.environ, XDG_DATA_DIRS=os.path.join(self.prefix, "share"))
        out = run(["bash", "--norc", "--noprofile", "-c", load], env=env)
        self.assertEqual("complete -F _stepscope stepscope", out.stdout.strip(), out.stderr)

    @unittest.skipUnless(shutil.which("zsh"), "zsh is not installed")
    def test_zsh_compinit_binds_the_installed_function(self):
        site = os.path.join(self.prefix, "share", "zsh", "site-functions")
        out = run(["zsh", "-fc", f"fpath=({site} $fpath); autoload -U compinit; compinit -u -D; print -r -- $_comps[stepscope]"])
        self.assertEqual("_stepscope", out.stdout.strip(), out.stderr)

    def test_pages_pass_groff_and_mandoc_checks(self):
        for page in sorted(os.listdir(self.man1)):
            path = os.path.join(self.man1, page)
            groff = run(["groff", "-man", "-ww", "-z", "-Tutf8", path])
            self.assertEqual("", groff.stderr, f"groff warns on {page}")
            self.assertEqual(0, groff.returncode, page)
            if shutil.which("mandoc"):
                lint = run(["mandoc", "-Tlint", "-W", "warning", path])
                self.assertEqual("", lint.stdout + lint.stderr, f"mandoc warns on {page}")

    def test_man_finds_each_command_page(self):
        # man-db reads "man stepscope analyze" as stepscope-analyze(1), as git's pages are found.
        env = dict(os.environ, MANPATH=os.path.join(self.prefix, "share", "man"))
        for path in [p for p in self.tree if len(p) == 1]:
            out = run(["man", "-w", "stepscope", path[0]], env=env)
            self.assertEqual(0, out.returncode, out.stderr)
            self.assertEqual(os.path.join(self.man1, page_file(path)), out.stdout.strip())

    def test_every_command_option_and_argument_of_the_help_is_in_its_page(self):
        main_page = rendered(os.path.join(self.man1, "stepscope.1"))
        for path, cmd in self.tree.items():
            with self.subTest(command=" ".join(path) or "stepscope"):
                text = rendered(os.path.join(self.man1, page_file(path)))
                heads = item_heads(text)
                for name in cmd.options + cmd.subcommands + cmd.positionals:
                    self.assertIn(name, heads, f"no item for {name}")
                for sub in cmd.subcommands:
                    self.assertIn(page_file(path + (sub,))[:-2] + "(1)", text)
                if path:
                    self.assertIn(page_file(path)[:-2] + "(1)", main_page)

    def test_each_page_shows_the_examples_of_its_help(self):
        for path, cmd in self.tree.items():
            text = rendered(os.path.join(self.man1, page_file(path)))
            examples = text.split("\nEXAMPLES\n", 1)[1] if "\nEXAMPLES\n" in text else ""
            shown = [line.strip() for line in examples.splitlines()]
            for example in cmd.examples:
                self.assertIn(example, shown, f"{' '.join(path)}: example missing from the page")


if __name__ == "__main__":
    unittest.main(verbosity=2)
