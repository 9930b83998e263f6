"""The examples that end each command's --help run and exit 0, or, where they cannot run here,
name only commands and options that exist (see examples.py for the rule)."""
import os
import unittest

import cli_help
import examples

SOURCE, BUILD, _ = cli_help.env()


class HelpExamplesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tree = cli_help.command_tree(os.path.join(BUILD, "stepscope"))
        cls.examples = examples.help_examples(cls.tree)

    def test_every_command_ends_its_help_with_examples(self):
        for path, cmd in self.tree.items():
            with self.subTest(command=" ".join(path) or "stepscope"):
                self.assertTrue(cmd.examples, "no examples at the end of its --help")

    def test_examples_name_real_commands_and_options(self):
        globals_ = cli_help.global_options(self.tree)
        for e in self.examples:
            with self.subTest(where=e.where, line=e.line):
                self.assertEqual([], examples.unknown_names(e.line, self.tree, globals_))

    def test_examples_run(self):
        for e in self.examples:
            with self.subTest(where=e.where, line=e.line):
                reason = examples.why_not_run(e)
                if reason:
                    print(f"not run: {e.where}: {e.line}  ({reason})")
                    continue
                rc, output, missing = examples.run(e, SOURCE, BUILD)
                self.assertEqual(examples.expected_exit(e.line), rc, output)
                if rc == 0:
                    self.assertEqual([], missing, "outputs it names were not written")


if __name__ == "__main__":
    unittest.main(verbosity=2)
