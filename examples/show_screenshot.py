"""Make ``examples/show-seed.png``: the ``toolmend show --html`` page of bug report 001.

Run from the repository root (needs the ``test`` extra for playwright, and Debian's chromium:
``apt-get install chromium``; no ``playwright install``)::

    .venv/bin/python examples/show_screenshot.py [HISTORY.json] [--provider P] [-o OUT.png]

It writes the page with the ``toolmend`` command itself, opens it in headless chromium and keeps
a screenshot of the whole page. The defaults reproduce the picture in the README: seed 001 (a
context compressor kept two tool results whose call it cut, and the last call has no result)
for OpenAI.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("TOOLMEND_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "history",
        nargs="?",
        default=str(ROOT / "examples" / "histories" / "seed001_trimmed_tool_group.json"),
    )
    parser.add_argument("--provider", "-p", default="openai")
    parser.add_argument("-o", "--output", default=str(ROOT / "examples" / "show-seed.png"))
    parser.add_argument("--width", type=int, default=1500)
    args = parser.parse_args()

    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as folder:
        page_file = Path(folder) / "show.html"
        # the file name shown on the page: as a user would type it from the repository root
        shown = os.path.relpath(args.history, ROOT)
        command = [sys.executable, "-m", "toolmend", "show", shown, "-p", args.provider]
        done = subprocess.run(
            [*command, "--html", str(page_file)], cwd=ROOT, capture_output=True, text=True
        )
        if done.returncode not in (0, 1):
            sys.stderr.write(done.stderr)
            return done.returncode
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(
                viewport={"width": args.width, "height": 800},
                device_scale_factor=1,
                color_scheme="light",
            )
            page.goto(page_file.as_uri())
            height = page.evaluate("document.documentElement.scrollHeight")
            page.set_viewport_size({"width": args.width, "height": height})
            page.screenshot(path=args.output, full_page=True)
            browser.close()
    print(args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
