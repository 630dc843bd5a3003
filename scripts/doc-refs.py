#!/usr/bin/env python3
"""Rewrites citations of the old one-file design document to the documents it was split into (issue 27).

docs/design.md was split: §1-§3 went to docs/contract.md, §5 to docs/data-model.md, the map (§4) to
docs/architecture.md under new numbers, and two of §4's sections to the contract and to design.md §11 (the table
below). Section numbers are shared by the documents and never reused, so a citation keeps its number unless the
table renumbers it. Run from the repository root: `python3 scripts/doc-refs.py` (prints the files it changed).
Idempotent: a citation it rewrote no longer names design.md unless its section is still there.

What it rewrites:
- "docs/design.md §n" (also with the file name in backticks, and lists "§a, §b and §c") in src/, README.md,
  docs/, openapi.yaml, bench/, conf/, deploy/ and scripts/. Applied Flyway migrations are left alone: Flyway
  checksums every line, comments included (DesignReferenceTest resolves their citations across the documents).
- In docs/*.md (not architecture.md, which was born with the new numbers): a bare "§4.n" of the old map, as
  "<file> §m" (or "§m" when the section is in the same document).
"""
import pathlib
import re
import sys

DESIGN = "docs/" + "design.md"

# The old map's sections: where each went, and under which number.
FOUR = {
    "4": ("architecture.md", "4"),
    "4.1": ("architecture.md", "4.1"),  # Packages -> The wings
    "4.2": ("architecture.md", "4.3"),  # Verticles, event loops and threads -> Threads and contexts
    "4.3": ("architecture.md", "4.4"),  # Event-bus addresses
    "4.4": ("architecture.md", "4.2"),  # One SMTP message through the parts -> One message's path
    "4.5": ("architecture.md", "4.2"),  # One HTTP send through the parts -> One message's path
    "4.6": ("contract.md", "1.11"),     # The operation status
    "4.7": ("design.md", "11.1"),       # Start and stop (architecture.md §4.5 has the outline)
    "4.8": ("design.md", "11.2"),       # Credentials and SIGHUP
    "4.9": ("contract.md", "1.12"),     # Changes to the API a client must follow
}

NUMBER = r"§\d+(?:\.\d+)*"
SEPARATOR = r"(?:\s*,\s*|\s+and\s+|\s+or\s+)"
CITATION = re.compile(re.escape(DESIGN) + r"(`?)(\s*)(" + NUMBER + r"(?:" + SEPARATOR + NUMBER + r")*)")
SECTION = re.compile(r"§(\d+(?:\.\d+)*)")
# A bare old §4.n in a document: not already after a file name ("contract.md §1.11"), nor an RFC's ("RFC 5321 §4.4").
BARE_FOUR = re.compile(r"(?<![a-z]\.md )(?<![a-z]\.md` )(?<!RFC \d{3} )(?<!RFC \d{4} )§(4\.\d+)\b(?!\.\d)")

ROOTS = ["src", "README.md", "docs", "openapi.yaml", "bench", "conf", "deploy", "scripts"]
FROZEN = pathlib.Path("src/main/resources/db/migration")
SKIPPED = {".git", "target", "node_modules"}


def target(number):
    """(file, number) of a section of the old document."""
    if number in FOUR:
        return FOUR[number]
    top = number.split(".")[0]
    if top in ("1", "2", "3"):
        return ("contract.md", number)
    if top == "5":
        return ("data-model.md", number)
    return ("design.md", number)


def rewrite_citation(m):
    tick, space, numbers = m.group(1), m.group(2), m.group(3)
    parts = re.split("(" + NUMBER + ")", numbers)  # numbers at odd positions, separators between
    targets = [target(p[1:]) for p in parts[1::2]]
    if len({f for f, _ in targets}) == 1:
        out = "docs/" + targets[0][0] + tick + space
        return out + SECTION.sub(lambda s: "§" + target(s.group(1))[1], numbers)
    # Sections in several documents: each number gets its own file name.
    out, k = [], 0
    for i, p in enumerate(parts):
        if i % 2 == 1:
            f, n = targets[k]
            k += 1
            out.append(("`" if tick else "") + "docs/" + f + tick + (space if k == 1 else " ") + "§" + n)
        else:
            out.append(p)
    return "".join(out)


def rewrite_bare(text, document):
    def one(m):
        f, n = FOUR[m.group(1)]
        return "§" + n if f == document else f + " §" + n
    return BARE_FOUR.sub(one, text)


def files():
    for root in ROOTS:
        p = pathlib.Path(root)
        if p.is_file():
            yield p
        elif p.is_dir():
            for f in sorted(p.rglob("*")):
                if f.is_file() and not SKIPPED.intersection(f.parts) and FROZEN not in f.parents:
                    yield f


def main():
    changed = []
    for f in files():
        try:
            text = f.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        new = CITATION.sub(rewrite_citation, text)
        if f.parent == pathlib.Path("docs") and f.suffix == ".md" and f.name != "architecture.md":
            new = rewrite_bare(new, f.name)
        if new != text:
            f.write_text(new, encoding="utf-8")
            changed.append(str(f))
    for c in changed:
        print(c)
    return 0


if __name__ == "__main__":
    sys.exit(main())
