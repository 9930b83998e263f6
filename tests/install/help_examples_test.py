"""The examples that end each command's --help run and exit 0, or, where they cannot run here,
name only commands and options that exist (see examples.py for the rule)."""
import os
import unittest

import cli_help
import examples

SOURCE, BUILD, _ = cli_help.env()


class HelpExamplesTest(examples.ExampleChecks, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tree = cli_help.command_tree(os.path.join(BUILD, "stepscope"))
        cls.examples = examples.help_examples(cls.tree)

    def test_every_command_ends_its_help_with_examples(self):
        for path, cmd in self.tree.items():
            with self.subTest(command=" ".join(path) or "stepscope"):
                self.assertTrue(cmd.examples, "no examples at the end of its --help")


if __name__ == "__main__":
    unittest.main(verbosity=2)
