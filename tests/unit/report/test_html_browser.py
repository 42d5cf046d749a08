"""The HTML report as a browser lays it out: verdict and gate table above the first plot.

The string tests in test_views.py check the order of the markup; this one checks what a
reader sees. Headless Chromium loads the page rendered from a committed example report,
a small script appended to it measures the rendered boxes on `load` and writes them as
JSON into the page, and `--dump-dom` prints the page back. Debian's `chromium` and no Python
browser library: Playwright's browser download cannot be reached from CI, and a DOM dump
needs no driver, no server and no package beyond the browser. `make test` installs it as
root; in CI (CI=true) a missing browser fails the test, elsewhere it skips.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from qgate.cli.main import main

H200 = Path(__file__).resolve().parents[3] / "examples" / "h200"
BROWSERS = ("chromium", "chromium-browser", "google-chrome")

# Page coordinates (scroll offset added) of the verdict, the gate table (its first column is
# "Gate"), each heading and each image.
_MEASURE = """<pre id="qgate-layout"></pre><script>
addEventListener("load", () => {
  const box = (e) => { const r = e.getBoundingClientRect();
    return [r.left, r.top + scrollY, r.right, r.bottom + scrollY]; };
  const table = [...document.querySelectorAll("table")]
    .find((t) => t.querySelector("th")?.textContent === "Gate");
  const verdict = document.querySelector("h1 + p");
  document.getElementById("qgate-layout").textContent = JSON.stringify({
    verdict: verdict && {text: verdict.textContent, box: box(verdict)},
    gate_table: table && box(table),
    headings: [...document.querySelectorAll("h1, h2")].map((h) => [h.textContent, box(h)[1]]),
    images: [...document.images].map((i) =>
      ({alt: i.alt, box: box(i), loaded: i.complete && i.naturalWidth > 0})),
  });
});
</script>"""


def chromium() -> str:
    """The headless browser on PATH; missing, the test fails in CI and skips elsewhere."""
    found = next((path for name in BROWSERS if (path := shutil.which(name))), None)
    if found:
        return found
    reason = f"none of {', '.join(BROWSERS)} on PATH; `make test` installs chromium as root"
    if os.environ.get("CI", "").lower() in ("true", "1"):
        pytest.fail(f"CI=true and {reason}")
    pytest.skip(reason)


def rendered_layout(browser: str, page: str, tmp_path: Path) -> dict[str, Any]:
    """Load the page in headless Chromium and return what the appended script measured."""
    path = tmp_path / "report.html"
    path.write_text(page.replace("</body>", _MEASURE + "</body>", 1))
    dom = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--window-size=1280,1000",
            "--virtual-time-budget=10000",
            "--dump-dom",
            path.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    found = re.search(r'<pre id="qgate-layout">(.*?)</pre>', dom, re.S)
    assert found and found.group(1), f"the layout script did not run; stdout: {dom[:300]}"
    return json.loads(html.unescape(found.group(1)))  # type: ignore[no-any-return]


def assert_readable_layout(layout: dict[str, Any], verdict: str, sections: list[str]) -> None:
    images = layout["images"]
    assert images, "no plot rendered"
    first_plot = min(img["box"][1] for img in images)
    assert layout["verdict"]["text"] == verdict
    assert layout["gate_table"], "no gate table"
    assert layout["verdict"]["box"][3] <= layout["gate_table"][1], "the verdict is not on top"
    assert layout["gate_table"][3] <= first_plot, "the gate table is not above the first plot"
    titles = [title for title, _ in sorted(layout["headings"], key=lambda h: h[1])]
    assert titles[0].startswith("qgate report: ")
    assert titles[1:] == sections
    plots = next(top for title, top in layout["headings"] if title == "Plots")
    assert plots <= first_plot
    broken = [img["alt"] for img in images if not img["loaded"]]
    assert not broken, f"images not loaded: {broken}"
    for i, a in enumerate(images):
        for b in images[i + 1 :]:
            (al, at, ar, ab), (bl, bt, br, bb) = a["box"], b["box"]
            overlap = al < br and bl < ar and at < bb and bt < ab
            assert not overlap, f"plots overlap: {a['alt']!r} and {b['alt']!r}"


@pytest.mark.parametrize(
    ("example", "verdict", "sections"),
    [
        (
            "smollm2-h200-fp8",
            "PASS",
            [
                "Gates",
                "Accuracy and flips",
                "Logit divergence (KL reference || candidate)",
                "Where the damage sits",
                "Performance",
                "Changes confirmed applied",
                "Plots",
                "Environment",
            ],
        ),
        (
            "llama3-8b-shape-h200-preview",
            "FAIL",
            [
                "Gates",
                "Accuracy and flips",
                "Performance",
                "Changes confirmed applied",
                "Plots",
                "Environment",
            ],
        ),
    ],
)
def test_browser_shows_verdict_and_gate_table_above_the_plots(
    example: str, verdict: str, sections: list[str], tmp_path: Path
) -> None:
    browser = chromium()
    out = tmp_path / "view.html"
    report = H200 / example / "report.intoto.jsonl"
    result = CliRunner().invoke(main, ["show", str(report), "--format", "html", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert_readable_layout(rendered_layout(browser, out.read_text(), tmp_path), verdict, sections)
