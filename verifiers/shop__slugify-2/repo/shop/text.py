import re


def slugify(name):
    """Turn a product name into a URL slug: lowercase words joined by dashes."""
    words = re.findall(r"[A-Za-z0-9]+", name)
    return "-".join(words)


def truncate(text, width):
    if len(text) <= width:
        return text
    return text[: width - 1] + "…"
