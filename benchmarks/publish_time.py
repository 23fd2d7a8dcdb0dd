"""How long `arraybench publish` takes for a store of N case records, how large the site is, and how soon
its first screen has loaded in headless chromium.

The store is made of real records (the committed GPU results and a CPU run, by default) copied into
as many synthetic runs as it takes to reach N, alternating machines, each run a later date and its
frameworks a later version, so the framework pages have versions to compare.

    .venv/bin/python benchmarks/publish_time.py --records 10000
"""

import argparse
import dataclasses
import json
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from arraybench.cli import main
from arraybench.results import SCHEMA, ResultsWriter, load_results

ROOT = Path(__file__).parents[1]
SOURCES = [ROOT / "docs/gpu/float32/results.jsonl", ROOT / "benchmark_results/latest/results.jsonl"]
PROBE = """<script>addEventListener("load", () => { const n = performance.getEntriesByType("navigation")[0];
const out = document.createElement("pre"); out.id = "probe";
out.textContent = JSON.stringify({dcl: n.domContentLoadedEventEnd, load: n.loadEventStart});
document.body.append(out); });</script>"""


def synthetic_runs(sources: list[Path], n_records: int, folder: Path) -> list[Path]:
    """Results files whose cases add up to `n_records`: copies of `sources` in turn."""
    loaded = [load_results(p) for p in sources]
    files, total, i = [], 0, 0
    while total < n_records:
        res = loaded[i % len(loaded)]
        generation = i // len(loaded)
        header = {**res.header, "schema": SCHEMA, "run_id": f"202601{1 + generation:02d}-{i:06d}-synth{i % 10}",
                  "started": f"2026-01-{1 + generation:02d}T00:00:{i % 60:02d}Z"}
        path = folder / f"run{i}.jsonl"
        writer = ResultsWriter(path, header)
        records = res.records[:n_records - total]
        for rec in records:
            info = dict(rec.backend_info or {})
            if info.get("version"):
                info["version"] = f"{info['version']}.post{generation}"
            writer.append(dataclasses.replace(rec, backend_info=info))
        writer.close()
        total += len(records)
        files.append(path)
        i += 1
    return files


def first_screen_ms(index: Path) -> dict[str, float] | None:
    """DOMContentLoaded and load of the site's index.html in headless chromium (None without chromium)."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        return None
    copy = index.with_name("probe.html")
    text = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", index.read_text(), count=1)
    copy.write_text(text.replace("<head>", "<head>\n" + PROBE, 1))
    with tempfile.TemporaryDirectory() as profile:
        out = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                              f"--user-data-dir={profile}", "--dump-dom", copy.as_uri()],
                             capture_output=True, text=True, timeout=180).stdout
    copy.unlink()
    found = re.search(r'<pre id="probe">(.*?)</pre>', out, re.S)
    return json.loads(found.group(1).replace("&quot;", '"')) if found else None


def main_() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--records", type=int, default=10_000)
    p.add_argument("--source", type=Path, action="append", help="results files to copy (default: GPU + CPU run)")
    p.add_argument("--keep", type=Path, help="build the store and site here and keep them")
    args = p.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="publish-time-"))
    work.mkdir(parents=True, exist_ok=True)
    files = synthetic_runs(args.source or SOURCES, args.records, work)
    db, site = work / "store.db", work / "site"
    t0 = time.perf_counter()
    assert main(["import", *map(str, files), "--store", str(db)]) == 0
    t1 = time.perf_counter()
    assert main(["publish", str(site), "--store", str(db)]) == 0
    t2 = time.perf_counter()
    assert main(["publish", str(site), "--store", str(db)]) == 0  # again: every run's report is kept
    t3 = time.perf_counter()
    size = sum(f.stat().st_size for f in site.rglob("*") if f.is_file())
    pages = sum(1 for f in site.rglob("*.html") if "runs" not in f.parts)
    index = site / "index.html"
    print(f"\n{args.records} case records in {len(files)} runs: import {t1 - t0:.1f} s, publish {t2 - t1:.1f} s, "
          f"again with no run changed {t3 - t2:.1f} s")
    print(f"site: {size / 1e6:.1f} MB ({pages} pages of its own, {len(files)} run reports); "
          f"index.html {index.stat().st_size / 1e3:.0f} kB")
    print(f"first screen in headless chromium: {first_screen_ms(index)} (ms after navigation start)")
    if args.keep is None:
        shutil.rmtree(work)


if __name__ == "__main__":
    main_()
