"""Every stepscope command line in the README and docs/ runs and exits as documented, or, where
it cannot run here, names only commands and options that exist (see examples.py for the rule)."""
import os
import unittest

import cli_help
import examples

SOURCE, BUILD, _ = cli_help.env()


class DocExamplesTest(examples.ExampleChecks, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tree = cli_help.command_tree(os.path.join(BUILD, "stepscope"))
        cls.examples = examples.doc_examples(SOURCE)

    def test_the_docs_have_examples(self):
        where = {e.where.split(":")[0] for e in self.examples}
        self.assertIn("README.md", where)
        self.assertGreater(len(self.examples), 20)


if __name__ == "__main__":
    unittest.main(verbosity=2)
