"""Rust source as text for the project's checks (module-loops,
code-limits): comments, strings and character literals blanked in one pass,
so that neither a `//` inside a string nor a brace inside a comment is
read as code. Python 3, standard library only."""

import re


def strip(text):
    """Comments, strings and character literals blanked, in one pass (a
    `//` inside a string is not a comment); newlines kept."""
    out, i, n = [], 0, len(text)
    blank = lambda s: re.sub(r"[^\n]", " ", s)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(blank(text[i:j]))
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:]) and not re.match(r"\w", text[i - 1 : i] or " "):
            hashes = re.match(r'r(#*)"', text[i:]).group(1)
            end = text.find('"' + hashes, i + 2 + len(hashes))
            j = n if end < 0 else end + 1 + len(hashes)
            out.append('""' + blank(text[i + 2 : j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('"' + blank(text[i + 1 : j]) + '"')
            i = j + 1
        elif c == "'" and re.match(r"'(\\.|[^'\\\n])'", text[i:]):
            m = re.match(r"'(\\.|[^'\\\n])'", text[i:])
            out.append("' '" + " " * (len(m.group(0)) - 3))
            i += len(m.group(0))
        else:
            out.append(c)
            i += 1
    return "".join(out)
