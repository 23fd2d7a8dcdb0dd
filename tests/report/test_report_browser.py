"""report.html in a real browser (Debian's chromium, headless): the winners map on the first screen, no console
errors, every plot displayed, sortable."""

import json
import os
import re
import shutil
import subprocess

import pytest

from arraybench.report import write_all
from tests.report.test_report import EVIL, record, results_of, sweep_records

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# Skipped only on a developer's machine without chromium; in CI (`make test` installs it) a
# missing browser fails the test instead of hiding it.
pytestmark = pytest.mark.skipif(
    CHROMIUM is None and not os.environ.get("CI"), reason="chromium is not installed; `make browser` installs it"
)

# Injected into a copy of the page, before its own script: records every error and, once the
# page has loaded, what a reader would see, into the DOM where --dump-dom can read it.
PROBE = r"""<script>
window.probeErrors = [];
const probeConsoleError = console.error;
console.error = (...args) => { window.probeErrors.push(args.map(String).join(" ")); probeConsoleError(...args); };
addEventListener("error",
  (ev) => window.probeErrors.push(ev.message || "failed to load " + (ev.target.src || ev.target.href)), true);
addEventListener("unhandledrejection", (ev) => window.probeErrors.push(String(ev.reason)));
addEventListener("load", () => {
  const imgs = Array.from(document.querySelectorAll("figure.plot img"));
  const shown = imgs.filter((i) => i.complete && i.naturalWidth > 0 && i.getBoundingClientRect().width > 100);
  const table = document.getElementById("cases");
  const col = Array.from(table.tHead.rows[0].cells).findIndex((th) => th.textContent === "median / call");
  table.tHead.rows[0].cells[col].click();
  const order = Array.from(table.tBodies[0].rows).map((r) => r.cells[col].dataset.sort);
  const out = document.createElement("pre");
  out.id = "probe";
  const evil = {asText: document.body.textContent.includes('<img src=x onerror=alert(1)>'),
                asElement: document.querySelectorAll('img[src="x"]').length};
  const first = document.querySelector("main section");
  const map = first.querySelector("figure.plot img").getBoundingClientRect();
  const glance = {first: first.id, map: [map.left, map.top, map.right, map.bottom].map(Math.round),
                  screen: [innerWidth, innerHeight],
                  words: Array.from(first.querySelectorAll("ul.glance li"), (li) => li.textContent.split(/\s+/).length),
                  paragraphs: document.querySelectorAll("#answer p.answer").length};
  out.textContent = JSON.stringify({plots: imgs.length, shown: shown.length, errors: window.probeErrors, order, evil,
                                    glance});
  document.body.append(out);
});
</script>"""


def chromium(tmp_path, *args):
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=0", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180)


def test_report_page_in_headless_chromium(tmp_path):
    assert CHROMIUM is not None, "chromium is missing in CI: `make browser` installs it"
    recs = sweep_records() + [record(EVIL, d, "numpy", "eager", 1e-3 * d) for d in (1, 2)]
    out = tmp_path / "report"
    rep = write_all([results_of(recs)], out)
    probe_page = out / "probe.html"
    probe_page.write_text(rep.html.read_text().replace("<head>", "<head>\n" + PROBE, 1))

    dom = chromium(tmp_path, "--virtual-time-budget=10000", "--window-size=1300,900", "--dump-dom",
                   probe_page.as_uri())
    found = re.search(r'<pre id="probe">(.*?)</pre>', dom.stdout, re.S)
    assert found, dom.stderr[-2000:]
    seen = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    assert seen["errors"] == []
    # The workload named <img src=x onerror=alert(1)> is shown as text and never becomes an element.
    assert seen["evil"] == {"asText": True, "asElement": 0}
    assert "CONSOLE" not in dom.stderr  # the page itself logs nothing, errors included
    # the winners map, bars and scaling for both workloads, heatmap, roofline: each drawn by the browser
    assert seen["plots"] == len(rep.plots) // 2 == 7 and seen["shown"] == 7
    # The page opens with the winners map, whole inside the first screen (1300×900), a line of at most
    # 25 words per workload under it; the answer's paragraphs follow.
    # (headless chromium's --dump-dom keeps room for a browser's bars: the page gets 1300×757 of the window)
    left, top, right, bottom = seen["glance"]["map"]
    width, height = seen["glance"]["screen"]
    assert seen["glance"]["first"] == "glance" and width == 1300 and 700 < height <= 900, seen["glance"]
    assert 0 < left and 0 < top < 300 and right <= width and bottom <= height and right - left > 300, seen["glance"]
    assert len(seen["glance"]["words"]) == 2 and max(seen["glance"]["words"]) <= 25
    assert seen["glance"]["paragraphs"] == 2
    timed = [float(v) for v in seen["order"] if v]
    assert timed == sorted(timed) and len(timed) > 10
    assert seen["order"][-1] == ""  # cases without a time sort last

    shot = tmp_path / "report.png"
    chromium(tmp_path, "--hide-scrollbars", "--window-size=1300,900", f"--screenshot={shot}", rep.html.as_uri())
    assert shot.read_bytes()[:4] == b"\x89PNG" and shot.stat().st_size > 30_000
    print(f"screenshot: {shot}")
