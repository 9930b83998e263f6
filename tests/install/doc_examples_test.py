"""Every stepscope command line in the README and docs/ runs and exits as documented, or, where
it cannot run here, names only commands and options that exist (see examples.py for the rule)."""
import os
import unittest

import cli_help
import examples

SOURCE, BUILD, _ = cli_help.env()


class DocExamplesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tree = cli_help.command_tree(os.path.join(BUILD, "stepscope"))
        cls.examples = examples.doc_examples(SOURCE)

    def test_the_docs_have_examples(self):
        where = {e.where.split(":")[0] for e in self.examples}
        self.assertIn("README.md", where)
        self.assertGreater(len(self.examples), 20)

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
