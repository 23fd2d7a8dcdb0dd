"""The published site in a real browser (Debian's chromium, headless, from file://): it loads offline in under a
second, its first screen shows the answer, every link resolves, and a hostile workload name runs nothing."""

import json
import os
import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from arraybench.cli import main
from tests.report.test_report_browser import CHROMIUM, chromium
from tests.site.test_publish import SCRIPT, two_machine_store

# As the report's browser test: skipped only on a developer's machine without chromium.
pytestmark = pytest.mark.skipif(CHROMIUM is None and not os.environ.get("CI"),
                                reason="chromium is not installed; `make browser` installs it")
# The window a reader opens the site in: the answer must be inside it without scrolling.
WINDOW = (1280, 800)

# Runs in a copy of index.html (beside it, so its links resolve alike) once the page has loaded.
PROBE = """<script>
window.probeErrors = [];
addEventListener("error", (ev) => window.probeErrors.push(ev.message || "failed to load " + ev.target.src), true);
addEventListener("securitypolicyviolation", (ev) => window.probeErrors.push("blocked " + ev.violatedDirective));
addEventListener("load", () => {
  const nav = performance.getEntriesByType("navigation")[0];
  const answer = document.getElementById("answer");
  const box = answer.getBoundingClientRect();
  const items = Array.from(answer.querySelectorAll("ul.answer li"));
  const out = document.createElement("pre");
  out.id = "probe";
  out.textContent = JSON.stringify({
    errors: window.probeErrors,
    first: document.querySelector("main section").id,
    top: box.top, height: window.innerHeight,
    firstItemBottom: items.length ? items[0].getBoundingClientRect().bottom : null,
    answers: items.map((li) => li.textContent),
    scripts: document.scripts.length,
    evil: {asText: document.body.textContent.includes(EVIL_TEXT), imgs: document.querySelectorAll("img").length},
    links: Array.from(document.querySelectorAll("a")).map((a) => a.href),
    domContentLoadedMs: nav.domContentLoadedEventEnd, loadMs: nav.loadEventStart,
  });
  document.body.append(out);
});
</script>""".replace("EVIL_TEXT", json.dumps(SCRIPT).replace("</", "<\\/"))  # not the end of this script


def probe(tmp_path: Path, page: Path) -> dict:
    """The page as a reader's browser saw it once loaded (the probe needs its inline script allowed)."""
    text = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page.read_text(), count=1)
    copy = page.with_name("probe.html")
    copy.write_text(text.replace("<head>", "<head>\n" + PROBE, 1))
    dom = chromium(tmp_path, f"--window-size={WINDOW[0]},{WINDOW[1]}", "--dump-dom", copy.as_uri())
    found = re.search(r'<pre id="probe">(.*?)</pre>', dom.stdout, re.S)
    assert found, dom.stderr[-2000:]
    copy.unlink()
    return json.loads(found.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">")
                      .replace("&amp;", "&"))


def test_the_site_loads_offline_answers_on_its_first_screen_and_every_link_resolves(tmp_path, capsys):
    assert CHROMIUM is not None, "chromium is missing in CI: `make browser` installs it"
    site = tmp_path / "site"
    assert main(["publish", str(site), "--store", str(two_machine_store(tmp_path)), "--full-reports", "1"]) == 0
    capsys.readouterr()

    seen = probe(tmp_path, site / "index.html")
    assert seen["errors"] == []
    # The changes over time come first, short, and the answer follows on the first screen, with the sort
    # sentence across both machines.
    assert seen["first"] == "changes" and seen["top"] < 450
    assert seen["firstItemBottom"] is not None and seen["firstItemBottom"] < seen["height"]
    sort = next(a for a in seen["answers"] if a.startswith("sort (float32)"))
    assert "on the 2-core EPYC, numpy·eager" in sort and "on the H100, torch·eager·gpu" in sort
    # The hostile workload name is text; the page has no script but the probe's and no image at all.
    assert seen["evil"] == {"asText": True, "imgs": 0} and seen["scripts"] == 1
    # Every link, as the browser resolved it, is a file of the site; each run's page is among them, and opens.
    targets = {Path(unquote(urlsplit(href).path)) for href in seen["links"]}
    assert all(t.is_file() and site in t.parents for t in targets), targets
    runs = ("20260101-000000-aaaaaa", "20260102-000000-bbbbbb", "20260103-000000-cccccc")
    assert {site / "runs" / run / "index.html" for run in runs} <= targets
    dom = chromium(tmp_path, "--dump-dom", (site / "runs" / runs[-1] / "index.html").as_uri())
    assert "The answer of this run" in dom.stdout and 'href="report.html"' in dom.stdout
    dom = chromium(tmp_path, "--dump-dom", (site / "runs" / runs[-1] / "report.html").as_uri())
    assert "<h1>arraybench report</h1>" in dom.stdout and "sort" in dom.stdout
    # The first screen is there at once: the index does not grow with the runs (test_publish checks that).
    assert seen["loadMs"] < 1000

    # The page as published (its content security policy on): nothing runs, nothing is reported.
    dom = chromium(tmp_path, "--dump-dom", (site / "index.html").as_uri())
    assert "<script" not in dom.stdout and "&lt;script&gt;alert(1)&lt;/script&gt;" in dom.stdout
    assert "CONSOLE" not in dom.stderr
    print(f"first screen: DOMContentLoaded {seen['domContentLoadedMs']:.0f} ms, load {seen['loadMs']:.0f} ms "
          f"({(site / 'index.html').stat().st_size} bytes)")


# Runs in a copy of a history page once it has loaded: where its first plot is drawn, and what it holds.
PLOT_PROBE = """<script>
addEventListener("load", () => {
  // The plot the link points at: the first one at or after its anchor (the page opens scrolled to it).
  const anchor = document.getElementById(decodeURIComponent(location.hash.slice(1))) || document.body;
  const svg = Array.from(document.querySelectorAll("svg")).find(
    (s) => anchor.contains(s) || (anchor.compareDocumentPosition(s) & Node.DOCUMENT_POSITION_FOLLOWING));
  const box = svg ? svg.getBoundingClientRect() : null;
  const out = document.createElement("pre");
  out.id = "probe";
  out.textContent = JSON.stringify({top: box && box.top, width: box && box.width, height: window.innerHeight,
                                    shapes: svg ? svg.querySelectorAll("*").length : 0,
                                    titles: Array.from(svg ? svg.querySelectorAll("title") : [],
                                                       (t) => t.textContent)});
  document.body.append(out);
});
</script>"""


def test_a_change_is_on_the_first_screen_and_its_plot_opens_in_view(tmp_path, capsys):
    from tests.store.test_changes import stored_history

    assert CHROMIUM is not None, "chromium is missing in CI: `make browser` installs it"
    ids = stored_history(tmp_path / "s.db")
    site = tmp_path / "site"
    assert main(["publish", str(site), "--store", str(tmp_path / "s.db")]) == 0
    capsys.readouterr()
    seen = probe(tmp_path, site / "index.html")
    assert seen["errors"] == [] and seen["first"] == "changes" and seen["loadMs"] < 1000
    link = next(href for href in seen["links"] if "/history/" in href and "#" in href)
    target = Path(unquote(urlsplit(link).path))
    assert target.is_file() and site in target.parents
    text = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", target.read_text(), count=1)
    copy = target.with_name("probe.html")
    copy.write_text(text.replace("<head>", "<head>\n" + PLOT_PROBE, 1))
    dom = chromium(tmp_path, f"--window-size={WINDOW[0]},{WINDOW[1]}", "--dump-dom",
                   copy.as_uri() + "#" + urlsplit(link).fragment)
    found = re.search(r'<pre id="probe">(.*?)</pre>', dom.stdout, re.S)
    assert found, dom.stderr[-2000:]
    plot = json.loads(found.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">")
                      .replace("&amp;", "&"))
    # The linked plot is drawn in view, at full width, and marks the step at the run it started.
    assert plot["width"] > 300 and plot["shapes"] > 5 and 0 <= plot["top"] < plot["height"], plot
    assert any(f"from run {ids[20]}" in t for t in plot["titles"]), plot
