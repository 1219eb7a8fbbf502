"""Checks that README.md shows each example file exactly as it is: the fenced code block that follows the line
`<!-- example: PATH -->` (PATH relative to the README) must equal the file PATH, byte for byte.

    check_readme.py README.md FILE...
"""
import difflib
import os
import sys


def block_after_marker(lines, marker):
    """The lines of the first fenced block after the marker line, or None when the marker or its block is missing."""
    try:
        i = lines.index(marker)
    except ValueError:
        return None
    i += 1
    while i < len(lines) and not lines[i].strip():
        i += 1
    if i >= len(lines) or not lines[i].startswith("```"):
        return None
    fence = lines[i][: len(lines[i]) - len(lines[i].lstrip("`"))]
    body = []
    for line in lines[i + 1:]:
        if line.rstrip() == fence:
            return body
        body.append(line)
    return None


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    readme = argv[1]
    with open(readme, encoding="utf-8") as f:
        lines = f.read().split("\n")
    failures = 0
    for path in argv[2:]:
        rel = os.path.relpath(path, os.path.dirname(os.path.abspath(readme)))
        marker = f"<!-- example: {rel} -->"
        body = block_after_marker(lines, marker)
        with open(path, encoding="utf-8") as f:
            want = f.read()
        if body is None:
            print(f"{readme}: no `{marker}` line followed by a fenced code block", file=sys.stderr)
            failures += 1
        elif "\n".join(body) + "\n" != want:
            diff = difflib.unified_diff(want.splitlines(), body, f"{rel}", f"{readme}, the block after the marker",
                                        lineterm="")
            print("\n".join(diff), file=sys.stderr)
            failures += 1
        else:
            print(f"{rel}: README shows it as it is ({len(body)} lines)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
