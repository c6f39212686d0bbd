"""Tests of the search box (the task is to make them pass)."""

import unittest

import app
from posts import POSTS


class TestSearch(unittest.TestCase):
    def test_finds_by_title(self):
        import search
        self.assertEqual([p["slug"] for p in search.search(POSTS, "jq")], ["jq"])

    def test_ignores_case(self):
        import search
        self.assertEqual([p["slug"] for p in search.search(POSTS, "UNIX")], ["unix"])

    def test_front_page_has_a_search_box(self):
        self.assertIn('<form action="/search">', app.render())


if __name__ == "__main__":
    unittest.main()
