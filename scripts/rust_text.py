"""Rust source as text for the project's checks (module-loops,
code-limits), one reader for both: comments, strings and character
literals blanked in one pass, so that neither a `//` inside a string nor a
brace inside a comment is read as code; and test code, by one definition,
blanked too (newlines kept, so line numbers stay true). Python 3, standard
library only."""

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


IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
TEST_MOD = re.compile(r"#\[cfg\(test\)\]\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+(%s)\s*([{;])" % IDENT)


def blank_test_mods(text):
    """`text` (already stripped) with its top-level `#[cfg(test)] mod NAME
    { ... }` blocks blanked, newlines kept: the one definition of test code
    inside a file. A `#[cfg(test)]` on a function or an impl does not hide
    what follows it."""
    out, depth, i = [], 0, 0
    while i < len(text):
        if depth == 0:
            m = TEST_MOD.match(text, i)
            if m and m.group(2) == "{":
                j, d = m.end(), 1
                while j < len(text) and d:
                    d += {"{": 1, "}": -1}.get(text[j], 0)
                    j += 1
                out.append(re.sub(r"[^\n]", " ", text[i:j]))
                i = j
                continue
        ch = text[i]
        depth += {"{": 1, "}": -1}.get(ch, 0)
        out.append(ch)
        i += 1
    return "".join(out)


def test_only_children(text):
    """Names of the modules a file declares `#[cfg(test)] mod NAME;`: the
    files of test-only modules, which are test code whole."""
    return {m.group(1) for m in TEST_MOD.finditer(text) if m.group(2) == ";"}


def is_test_file(rel):
    """A path (relative to the crates folder) of a test file: under a
    tests/ folder, or named tests.rs or *_tests.rs."""
    parts = rel.replace("\\", "/").split("/")
    return "tests" in parts or parts[-1] == "tests.rs" or parts[-1].endswith("_tests.rs")
