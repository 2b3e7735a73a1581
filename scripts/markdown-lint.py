#!/usr/bin/env python3
"""Reads every Markdown file of the repository with a CommonMark parser (markdown-it-py) and fails on what renders
wrong or leads nowhere:

- a code fence that is never closed (CommonMark then runs it to the end of the file: the rest renders as code; a
  closing fence with text after it, "``` Next…", does not close it);
- a relative link to a file that does not exist;
- a link to an anchor (`#heading` or `File.md#heading`) that no heading of that file makes, by GitHub's rule (lower
  case, punctuation dropped, spaces to hyphens).

DocC's own links (`<doc:Article>`, ``` ``Symbol`` ```, and site paths such as `/documentation/dispatchkit` in a
catalog) are left to `make docs`.
"""
import glob
import os
import re
import subprocess
import sys

try:
    from markdown_it import MarkdownIt
except ImportError:
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "markdown-it-py"], check=True)
    from markdown_it import MarkdownIt

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SKIPPED = re.compile(r"(^|/)(\.build[^/]*|\.git|node_modules)(/|$)")
PARSER = MarkdownIt("commonmark")


def markdown_files():
    for path in sorted(glob.glob(os.path.join(ROOT, "**", "*.md"), recursive=True)):
        relative = os.path.relpath(path, ROOT)
        if not SKIPPED.search(relative):
            yield relative


def slug(heading):
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def headings(tokens):
    anchors, counts = set(), {}
    for index, token in enumerate(tokens):
        if token.type == "heading_open":
            inline = tokens[index + 1]
            plain = "".join(child.content for child in inline.children or [] if child.type in ("text", "code_inline"))
            base = slug(plain)
            count = counts.get(base, 0)
            counts[base] = count + 1
            anchors.add(base if count == 0 else f"{base}-{count}")
    return anchors


def parse(path):
    text = open(os.path.join(ROOT, path), encoding="utf-8").read()
    return text.splitlines(), PARSER.parse(text)


def lint(path, cache):
    lines, tokens = cache[path]
    problems = []
    for token in tokens:
        if token.type == "fence" and token.map:
            opening = lines[token.map[0]].strip()
            fence = re.match(r"(`{3,}|~{3,})", opening).group(1)
            last = lines[token.map[1] - 1].strip() if token.map[1] - 1 > token.map[0] else ""
            closed = last.startswith(fence[0] * len(fence)) and set(last) == {fence[0]}
            if not closed:
                problems.append(f"{path}:{token.map[0] + 1}: this code fence is never closed (the rest renders as code)")
        for child in token.children or []:
            if child.type != "link_open":
                continue
            href = child.attrs.get("href", "")
            if re.match(r"^[a-z][a-z0-9+.-]*:", href, re.I):
                continue  # http:, https:, mailto:, doc:
            line = (token.map[0] + 1) if token.map else 0
            if href.startswith("/") and ".docc/" in path:
                continue  # a path of the built documentation site, which `make docs` checks
            target, _, anchor = href.partition("#")
            target_path = os.path.normpath(os.path.join(os.path.dirname(path), target)) if target else path
            if target and not os.path.exists(os.path.join(ROOT, target_path)):
                problems.append(f"{path}:{line}: the link '{href}' leads to no file ({target_path})")
                continue
            if anchor and target_path.endswith(".md"):
                if target_path not in cache:
                    cache[target_path] = parse(target_path)
                if anchor not in headings(cache[target_path][1]):
                    problems.append(f"{path}:{line}: the link '{href}' names an anchor that {target_path} has no heading for")
    return problems


SELF_TEST = """# Self-test

[a file](NoSuchFile.md) and [a heading](#no-such-heading) and [one](#self-test)

```swift
print(1)
``` Next, prose that CommonMark reads as code.
"""


def self_test():
    """The checker must find the three kinds of problem in a document made to have each, and nothing else."""
    path = "SELF_TEST.md"
    cache = {path: (SELF_TEST.splitlines(), PARSER.parse(SELF_TEST))}
    found = lint(path, cache)
    kinds = ["never closed", "leads to no file", "names an anchor"]
    if len(found) != 3 or not all(any(kind in problem for problem in found) for kind in kinds):
        print("markdown-lint: self-test failed; found:", *found, sep="\n  ")
        return False
    return True


def main():
    if not self_test():
        return 1
    cache, problems = {}, []
    files = list(markdown_files())
    for path in files:
        cache.setdefault(path, parse(path))
        problems += lint(path, cache)
    for problem in problems:
        print(problem)
    if problems:
        print(f"markdown-lint: {len(problems)} problem(s) in {len(files)} Markdown files")
        return 1
    print(f"markdown-lint: {len(files)} Markdown files: every fence closed, every relative link and anchor found")
    return 0


if __name__ == "__main__":
    sys.exit(main())
