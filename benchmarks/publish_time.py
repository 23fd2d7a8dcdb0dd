"""How long `arraybench publish` takes on a store of a year of nightly runs, how long publishing again takes
after one more run, how large the site and its pages are, and how soon its first screen loads in chromium.

The store is either named (`--store`, e.g. one benchmarks/thousand_runs.py built) or built here: the
committed GPU runs (float32 and float64, 285 records together) copied row for row, in SQL, into N runs
on three machines, one run a night over a year, each framework's version advancing once a month. A
copy keeps each record as it was, raw samples included, so reading the store costs what a real one does.

    .venv/bin/python benchmarks/publish_time.py [--runs 1000] [--store PATH] [--keep DIR]
"""

import argparse
import datetime
import json
import re
import resource
import shutil
import sqlite3
import subprocess
import tempfile
import time
from pathlib import Path

from arraybench.cli import main
from arraybench.machine.host import fingerprint

ROOT = Path(__file__).parents[1]
SOURCES = [ROOT / "docs/gpu/float32/results.jsonl", ROOT / "docs/gpu/float64/results.jsonl"]
MACHINES = 3
FIRST_NIGHT = datetime.datetime(2026, 1, 1, 2, 0, tzinfo=datetime.UTC)
PROBE = """<script>addEventListener("load", () => { const n = performance.getEntriesByType("navigation")[0];
const out = document.createElement("pre"); out.id = "probe";
out.textContent = JSON.stringify({dcl: n.domContentLoadedEventEnd, load: n.loadEventStart});
document.body.append(out); });</script>"""
# A record's framework version a month later: "2.11.0" in month 3 is "2.11.0.post3".
NEWER = """CASE WHEN json_extract(record, '$.backend_info.version') IS NULL THEN record
           ELSE json_set(record, '$.backend_info.version', json_extract(record, '$.backend_info.version') || ?) END"""


def nightly_store(db: Path, n_runs: int) -> None:
    """`n_runs` runs of SOURCES' records, one a night, the machines in turn."""
    assert main(["import", *map(str, SOURCES), "--store", str(db)]) == 0
    con = sqlite3.connect(db)
    for i in range(n_runs):
        add_night(con, i)
    con.execute("DELETE FROM cases WHERE run_id IN (SELECT id FROM runs WHERE id NOT LIKE 'night%')")
    con.execute("DELETE FROM runs WHERE id NOT LIKE 'night%'")
    con.commit()
    con.execute("VACUUM")
    con.close()


def add_night(con: sqlite3.Connection, i: int) -> str:
    """Run `i`: every record of the imported sources, as if measured on machine i % 3 on night i // 3."""
    sources = con.execute("SELECT id, environment, settings, header FROM runs WHERE id NOT LIKE 'night%' "
                          "ORDER BY id").fetchall()
    night = FIRST_NIGHT + datetime.timedelta(days=i // MACHINES, minutes=i % MACHINES)
    month = f".post{(night - FIRST_NIGHT).days // 30}"
    rid = f"night-{night:%Y%m%d-%H%M%S}-m{i % MACHINES}"
    env = json.loads(sources[0][1])
    env["hostname"] = f"gpu-node-{i % MACHINES}"
    env["versions"] = {k: v and v + month for k, v in (env.get("versions") or {}).items()}
    rest = {**json.loads(sources[0][3]), "run_id": rid, "started": night.isoformat()}
    con.execute("INSERT INTO runs (id, started, machine, arraybench_version, environment, settings, header) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)", (rid, night.isoformat(), fingerprint(env),
                                                 rest.get("arraybench_version"), json.dumps(env), sources[0][2],
                                                 json.dumps(rest)))
    offset = 0
    for source, *_ in sources:
        con.execute(f"INSERT INTO cases (run_id, seq, case_id, record, backend, mode, status, figures) "
                    f"SELECT ?, seq + ?, case_id, {NEWER}, backend, mode, status, figures FROM cases "
                    "WHERE run_id = ?", (rid, offset, month, source))
        offset += con.execute("SELECT COUNT(*) FROM cases WHERE run_id = ?", (source,)).fetchone()[0]
    return rid


def one_more_run(db: Path) -> None:
    """What tonight's push adds to a store built here: the next night's run."""
    assert main(["import", *map(str, SOURCES), "--store", str(db)]) == 0
    con = sqlite3.connect(db)
    add_night(con, con.execute("SELECT COUNT(*) FROM runs WHERE id LIKE 'night%'").fetchone()[0])
    con.execute("DELETE FROM cases WHERE run_id IN (SELECT id FROM runs WHERE id NOT LIKE 'night%')")
    con.execute("DELETE FROM runs WHERE id NOT LIKE 'night%'")
    con.commit()
    con.close()


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


def cpu_s() -> float:
    """CPU seconds of this process and its finished children (a publish's workers)."""
    return sum(r.ru_utime + r.ru_stime for r in map(resource.getrusage, (resource.RUSAGE_SELF,
                                                                         resource.RUSAGE_CHILDREN)))


def timed_publish(site: Path, db: Path) -> str:
    """Its wall time, and its CPU time: on a VM shared with others the wall time is theirs too, and
    the CPU time over the usable cores says what an idle machine would take at the least."""
    start, cpu = time.perf_counter(), cpu_s()
    assert main(["publish", str(site), "--store", str(db)]) == 0
    return f"{time.perf_counter() - start:.1f} s ({cpu_s() - cpu:.0f} CPU s)"


def main_() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=1000, help="nightly runs in the store built here")
    p.add_argument("--store", type=Path, help="publish this SQLite store instead (one more run is added to a copy)")
    p.add_argument("--keep", type=Path, help="build the store and site here and keep them")
    args = p.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="publish-time-"))
    work.mkdir(parents=True, exist_ok=True)
    db, site = work / "store.db", work / "site"
    t0 = time.perf_counter()
    if args.store:
        shutil.copyfile(args.store, db)
    elif not db.exists():
        nightly_store(db, args.runs)
    built = time.perf_counter() - t0
    first = timed_publish(site, db)
    again = timed_publish(site, db)
    one_more_run(db)
    after_one = timed_publish(site, db)
    files = [f for f in site.rglob("*") if f.is_file()]
    size = sum(f.stat().st_size for f in files)
    largest = max(files, key=lambda f: f.stat().st_size)
    index = site / "index.html"
    runs = sqlite3.connect(db).execute("SELECT COUNT(*), (SELECT COUNT(*) FROM cases) FROM runs").fetchone()
    print(f"\n{runs[1]} case records in {runs[0]} runs (store {db.stat().st_size / 1e6:.0f} MB, built in "
          f"{built:.0f} s): publish {first}; again, nothing changed {again}; after one more run {after_one}")
    print(f"site: {size / 1e6:.1f} MB in {len(files)} files; index.html {index.stat().st_size / 1e3:.0f} kB; "
          f"largest {largest.relative_to(site)} {largest.stat().st_size / 1e3:.0f} kB")
    print(f"first screen in headless chromium: {first_screen_ms(index)} (ms after navigation start)")
    if args.keep is None:
        shutil.rmtree(work)


if __name__ == "__main__":
    main_()
