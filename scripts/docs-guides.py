#!/usr/bin/env python3
"""Puts the guides of Docs/ into a staged copy of the umbrella's DocC catalog, so that one site holds the API
reference and the guides, and makes the site's landing page the umbrella's overview.

    scripts/docs-guides.py stage CATALOG      copies Docs/<guide>.md and Docs/images/ into CATALOG, with links
                                              rewritten for the site
    scripts/docs-guides.py landing ARCHIVE    gives the merged ARCHIVE's synthesized landing page the umbrella page's
                                              overview and guides, above its list of modules

Docs/ stays the source, read on GitHub as it is: a link to another guide becomes that guide's page in the site, a
link to a DocC article becomes the article's page, and a link to any other file of the repository keeps its text only.
"""
import json
import os
import re
import shutil
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GUIDES = ["GettingStarted", "AsyncCode", "LinuxNotes", "WhyIsItStuck", "Design", "Performance"]
LINK = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)")
UMBRELLA = "/documentation/concurrencykit"


def site_link(target):
    """Where a link of a guide leads in the site, or None when the file it names is not in the site."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("#"):
        return target
    path, _, anchor = target.partition("#")
    anchor = f"#{anchor}" if anchor else ""
    name = os.path.splitext(os.path.basename(path))[0]
    if path.endswith(".md") and name in GUIDES and os.path.dirname(path) in ("", "."):
        return f"{UMBRELLA}/{name.lower()}{anchor}"
    docc = re.search(r"Sources/(\w+)/\w+\.docc/(\w+)\.md$", os.path.normpath(os.path.join("Docs", path)))
    if docc:
        module, article = docc.groups()
        page = "" if article == module else f"/{article.lower()}"
        return f"/documentation/{module.lower()}{page}{anchor}"
    return None


def rewrite(text):
    def replace(match):
        bang, label, target = match.groups()
        if bang:
            return match.group(0)
        link = site_link(target)
        return f"[{label}]({link})" if link else label

    return LINK.sub(replace, text)


IMAGE_TAG = re.compile(r'<img src="images/([^"]+)" alt="([^"]*)"\s*/?>')


def stage(catalog):
    """Copies the guides, and the images they show (Docs/images/), into the catalog."""
    for guide in GUIDES:
        with open(os.path.join(ROOT, "Docs", f"{guide}.md"), encoding="utf-8") as source:
            text = source.read()
        # GitHub shows an HTML image; DocC drops it, and shows a Markdown image of a file in its catalog.
        text = IMAGE_TAG.sub(lambda match: f"![{match.group(2)}]({match.group(1)})", text)
        with open(os.path.join(catalog, f"{guide}.md"), "w", encoding="utf-8") as copy:
            copy.write(rewrite(text))
    images = os.path.join(ROOT, "Docs", "images")
    for name in sorted(os.listdir(images)) if os.path.isdir(images) else []:
        if name.endswith((".svg", ".png")):
            shutil.copy(os.path.join(images, name), os.path.join(catalog, name))


def landing(archive):
    """The merged site's front page: the umbrella's abstract, overview and guides, then the modules."""
    data = os.path.join(archive, "data")
    with open(os.path.join(data, "documentation.json"), encoding="utf-8") as file:
        front = json.load(file)
    with open(os.path.join(data, "documentation", "concurrencykit.json"), encoding="utf-8") as file:
        umbrella = json.load(file)
    front["abstract"] = umbrella.get("abstract", [])
    front["primaryContentSections"] = umbrella.get("primaryContentSections", [])
    modules = [
        dict(section, title="Modules") for section in front.get("topicSections", []) if section.get("identifiers")
    ]
    front["topicSections"] = umbrella.get("topicSections", []) + modules
    front.setdefault("references", {}).update(umbrella.get("references", {}))
    with open(os.path.join(data, "documentation.json"), "w", encoding="utf-8") as file:
        json.dump(front, file)


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("stage", "landing"):
        sys.exit(__doc__)
    stage(sys.argv[2]) if sys.argv[1] == "stage" else landing(sys.argv[2])


if __name__ == "__main__":
    main()
