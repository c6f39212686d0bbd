"""The blog's tests: python3 -m unittest"""

import unittest

import app


class TestRender(unittest.TestCase):
    def test_lists_every_post(self):
        html = app.render()
        self.assertIn("Hello, World", html)
        self.assertIn("Reading JSON with jq", html)


if __name__ == "__main__":
    unittest.main()
