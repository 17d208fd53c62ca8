#!/usr/bin/env python3
"""The "Open differences" section of differential/README.md, made from the committed files.

    python3 differential/differences.py > /tmp/section.md

Reads every conformance/SUITE/synapse-golden.json and synapse-differences.json and prints the
counts and the two tables (open causes, then intentional ones), one row per cause: entries of
several suites with the same Synapse and Sluice text are one cause. The counts of cases answered as
Synapse does come from `cargo test -p sluice --test differential -- --nocapture` (its first line);
this prints the cases and suites it can count from the files.
"""
import json
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent / "conformance"


def short(name, width=60):
    return name if len(name) <= width else name[:width] + "\u2026"


def cell(text):
    # Elements named in the text are code, not HTML, in a Markdown table.
    text = re.sub(r"(?<!`)(<[/A-Za-z][^<>]*>)(?!`)", r"`\1`", text)
    return text.replace("|", "\\|").replace("\n", " ")


def main():
    causes = {}
    suites = 0
    cases = 0
    for golden in sorted(ROOT.glob("*/synapse-golden.json")):
        suite = golden.parent.name
        suites += 1
        cases += len(json.loads(golden.read_text())["cases"])
        diffs = golden.parent / "synapse-differences.json"
        if not diffs.exists():
            continue
        for e in json.loads(diffs.read_text()):
            key = (e["kind"], e["synapse"], e["sluice"])
            for case, parts in e["cases"].items():
                causes.setdefault(key, []).append((suite, case, parts))
    print(f"{cases} cases in {suites} suites.\n")
    for kind, title in (("open", "### Open (not decided)"), ("intentional", '### Intentional (README, "Where Sluice differs from Synapse")')):
        print(title + "\n")
        print("| # | Synapse 3.0.1 | Sluice | Cases (suite: case, parts) |")
        print("| --- | --- | --- | --- |")
        n = 0
        for (k, synapse, sluice), where in causes.items():
            if k != kind:
                continue
            n += 1
            if len(where) > 5:
                per = {}
                for suite, _, _ in where:
                    per[suite] = per.get(suite, 0) + 1
                listed = f"{len(where)} cases: " + ", ".join(f"{s} {c}" for s, c in sorted(per.items()))
            else:
                listed = "<br>".join(f"{s}: {short(c)} ({', '.join(p)})" for s, c, p in where)
            print(f"| {n} | {cell(synapse)} | {cell(sluice)} | {cell(listed)} |")
        print()


if __name__ == "__main__":
    main()
