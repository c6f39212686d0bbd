"""The posts of a tiny blog."""

POSTS = [
    {"slug": "hello", "title": "Hello, World", "body": "The first post of this blog."},
    {"slug": "unix", "title": "Small Unix Programs", "body": "Programs that do one thing and compose."},
    {"slug": "jq", "title": "Reading JSON with jq", "body": "A filter for JSON on the command line."},
]
