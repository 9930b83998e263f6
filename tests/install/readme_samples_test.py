"""The README's sample outputs are what the command prints today (scripts/readme-samples)."""
import os
import subprocess
import unittest

import cli_help

SOURCE, BUILD, _ = cli_help.env()


class ReadmeSamplesTest(unittest.TestCase):
    def test_every_sample_is_the_commands_output(self):
        script = os.path.join(SOURCE, "scripts", "readme-samples")
        r = subprocess.run(["/usr/bin/python3", script, BUILD, "--check"], capture_output=True, text=True, check=False)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
