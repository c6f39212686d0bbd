"""Renders the blog's front page."""

from posts import POSTS


def render(posts=POSTS):
    items = "\n".join('<li><a href="/%s">%s</a></li>' % (p["slug"], p["title"]) for p in posts)
    return "<html><body>\n<h1>Blog</h1>\n<ul>\n%s\n</ul>\n</body></html>\n" % items


if __name__ == "__main__":
    print(render())
