#!/usr/bin/env python3
"""Applies (or with -R reverts) a `git diff` patch to the tree in the current folder, for machines
that have neither `patch` nor `git`. Hunks must match exactly: they are found at their line number,
or else at the nearest place where their old lines match. Nothing is written unless every hunk of
every file matches.
Usage: apply_patch.py [-R] PATCH
"""
import re
import sys

HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")


def parse(text):
    """[(path, [(old_start, new_start, old_lines, new_lines)])] from a unified diff."""
    files, hunks, path, hunk = [], None, None, None
    for line in text.splitlines(keepends=True):
        if line.startswith("diff --git "):
            path, hunk, hunks = None, None, []
            files.append([None, hunks])
        elif line.startswith("+++ "):
            path = line[4:].strip()
            files[-1][0] = path[2:] if path.startswith("b/") else path
        elif line.startswith("--- "):
            continue
        elif HUNK.match(line):
            m = HUNK.match(line)
            hunk = (int(m.group(1)), int(m.group(2)), [], [])
            hunks.append(hunk)
        elif hunk is not None and line[:1] in (" ", "-", "+"):
            if line[0] != "+":
                hunk[2].append(line[1:])
            if line[0] != "-":
                hunk[3].append(line[1:])
    return files


def apply(lines, hunks, reverse):
    shift = 0
    for old_start, new_start, old, new in hunks:
        start = old_start
        if reverse:
            start, old, new = new_start, new, old
        want = max(0, start - 1 + shift)
        places = [i for i in range(len(lines) - len(old) + 1) if lines[i:i + len(old)] == old]
        if not places:
            return None
        at = min(places, key=lambda i: abs(i - want))
        lines[at:at + len(old)] = new
        shift = at - (start - 1) + len(new) - len(old)
    return lines


def main():
    args = sys.argv[1:]
    reverse = "-R" in args
    args = [a for a in args if a != "-R"]
    if len(args) != 1:
        sys.exit(__doc__)
    results = []
    for path, hunks in parse(open(args[0], encoding="utf-8").read()):
        with open(path, encoding="utf-8") as f:
            lines = f.readlines()
        out = apply(lines, hunks, reverse)
        if out is None:
            sys.exit(f"apply_patch: {args[0]} does not apply to {path}")
        results.append((path, out))
    for path, out in results:
        with open(path, "w", encoding="utf-8") as f:
            f.writelines(out)


if __name__ == "__main__":
    main()
