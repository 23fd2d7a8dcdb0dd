"""`arraybench history`, `show`, `export`, `import`, `push` and `pull`: the results store from the command line."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from pathlib import Path
from typing import Any

from arraybench.cli.arguments import add_format_option
from arraybench.cli.exits import EXIT_OK, EXIT_REGRESSION
from arraybench.errors import UsageError
from arraybench.output import formats, terminal
from arraybench.report import environments, exports
from arraybench.report.data import run_views
from arraybench.report.table import render_markdown, tables
from arraybench.results import SCHEMA as RESULTS_SCHEMA
from arraybench.results import Results, ResultsWriter, atomic_write_text, being_written, flat_record, load_results
from arraybench.results.display import described
from arraybench.results.run_ids import run_id
from arraybench.store import STORE_ENV, RunSummary, Store, default_store, load
from arraybench.store.history import MEMORY, TIME, Change, changes
from arraybench.store.postgres import redact

# The store every command uses when --store is not given: over [tool.arraybench]'s `store`, under --store.


def add_parsers(sub: Any) -> None:
    """`history`, `show`, `export`, `import`, `push` and `pull`."""
    hist = sub.add_parser("history", help="stored runs: id, time, machine, backends, cases (--changes: the "
                                          "lasting changes found in them)")
    add_format_option(hist)
    hist.add_argument("--changes", action="store_true",
                      help="list the lasting changes in each case's time over the runs of its machine, newest "
                           f"first; exit {EXIT_REGRESSION} if one is slower")
    hist.add_argument("--since", metavar="RUN",
                      help="with --changes: only changes from this run on (a run id, a unique prefix, or latest)")
    show = sub.add_parser("show", help="a stored run's tables")
    show.add_argument("run", help="run id (or a unique prefix, or latest)")
    add_format_option(show)
    exp = sub.add_parser("export", help="write a run as a results file, or for a benchmarking dashboard")
    exp.add_argument("run", help="run id (or a unique prefix, or latest), or a results file")
    exp.add_argument("-o", "--output", required=True, metavar="FILE")
    exp.add_argument("--format", choices=exports.EXPORT_FORMATS, default="jsonl",
                     help="jsonl: a results file (default); pytest-benchmark: its JSON, for tools that "
                          "read it; bmf: the Bencher Metric Format (latency in ns)")
    imp = sub.add_parser("import", help="add results files to the store")
    imp.add_argument("results", nargs="+", help="results.jsonl files (or directories holding one)")
    runs = "run ids (or unique prefixes, or latest); default: every run"
    push = sub.add_parser("push", help="copy runs to a shared results store (again adds nothing)")
    push.add_argument("runs", nargs="*", metavar="RUN", help=runs)
    push.add_argument("--to", required=True, metavar="URL",
                      help="the shared store: postgresql://USER@HOST/DATABASE (the password from PGPASSWORD "
                           "or ~/.pgpass), or a SQLite file")
    pull = sub.add_parser("pull", help="copy runs from a shared results store (again adds nothing)")
    pull.add_argument("runs", nargs="*", metavar="RUN", help=runs)
    pull.add_argument("--from", dest="source", required=True, metavar="URL",
                      help="the shared store: postgresql://USER@HOST/DATABASE, or a SQLite file")
    for p in (hist, show, exp, imp):
        add_store_option(p)
    add_store_option(push, "results store to copy from")
    add_store_option(pull, "results store to copy into")


def apply_store_environment(parser: argparse.ArgumentParser) -> None:
    """$ARRAYBENCH_STORE as `arraybench run`'s --store default, over the one [tool.arraybench] gave it."""
    if os.environ.get(STORE_ENV):
        parser.set_defaults(store=os.environ[STORE_ENV])


def add_store_option(p: argparse.ArgumentParser, what: str = "results store") -> None:
    default = default_store()
    shown = redact(default).replace("%", "%%")  # argparse formats help with %
    p.add_argument("--store", default=default, metavar="PATH_OR_URL",
                   help=f"{what}: a SQLite file or a postgresql:// URL (default {shown}; ${STORE_ENV} and "
                        "[tool.arraybench] store set another)")


def load_all(refs: list[str], store: str) -> list[Results]:
    """Each results file or stored run of `refs`, every one loaded before the warnings are printed."""
    loaded = [load(ref, store) for ref in refs]
    for res in loaded:
        for w in res.warnings:
            print(f"arraybench: warning: {w}", file=sys.stderr)
    return loaded


def cmd_history(args: argparse.Namespace) -> int:
    if args.changes:
        return history_changes(args)
    if args.since is not None:
        raise UsageError("--since goes with --changes")
    with Store(args.store, create=False) as st:
        runs = st.runs()
    if not runs:
        print(f"no runs in {redact(args.store)}")
        return EXIT_OK
    if args.format != "text":
        print(formats.render_rows([dataclasses.asdict(r) for r in runs], args.format), end="")
        return EXIT_OK
    header = ["run", "started", "machine", "backends", "cases"]
    rows = [[r.id, r.started, r.machine, ",".join(r.backends), cases_cell(r)] for r in runs]
    terminal.print_table(header, rows)
    partial = [r for r in runs if r.incomplete is not None]
    if partial:
        print(f"\nstored in part (still running, or its store failed mid-run); on its machine, "
              f"`arraybench import FILE --store {redact(args.store)}` stores the rest:")
        for r in partial:
            print(f"  {r.id}: {r.incomplete}")
    return EXIT_OK


def history_changes(args: argparse.Namespace) -> int:
    """`history --changes`: the changes found, newest first; EXIT_REGRESSION if one is slower."""
    with Store(args.store, create=False) as st:
        found = changes(st, args.since)
    slower = sum(c.slower for c in found)
    since = f" from run {args.since} on" if args.since else ""
    if args.format in ("json", "csv"):
        print(formats.render_rows([c.to_json() for c in found], args.format), end="")
    elif not found:
        print(f"no lasting change in {redact(args.store)}{since} (method: docs/shared-store.md, Changes over time)")
    else:
        print(changes_text(found, since, markdown=args.format == "markdown"))
    return EXIT_REGRESSION if slower else EXIT_OK


def changes_text(found: list[Change], since: str, *, markdown: bool) -> str:
    """The changes as a list for people: the regressions first, then the improvements, each newest first."""
    lines = []
    groups = (("slower", [c for c in found if c.slower]),
              ("faster", [c for c in found if c.kind == TIME and not c.slower]),
              ("with more memory", [c for c in found if c.grew]),
              ("with less memory", [c for c in found if c.kind == MEMORY and not c.grew]))
    for title, part in groups:
        if part:
            lines.append(f"## {len(part)} {title}{since}" if markdown else f"{len(part)} {title}{since}:")
            lines += [f"- {c.text()}" if markdown else f"  {c.text()}" for c in part]
            lines.append("")
    return "\n".join(lines).rstrip()


def cases_cell(r: RunSummary) -> str:
    """A run's cases in `history`: how many, of how many planned, failed, and whether stored in part."""
    notes = [f"{r.failed} failed"] if r.failed else []
    if r.incomplete is not None:
        notes.append("stored in part")
    held = f"{r.cases} of {r.planned.planned} planned" if r.planned is not None and not r.planned.complete \
        else str(r.cases)
    return held + (f" ({', '.join(notes)})" if notes else "")


def cmd_show(args: argparse.Namespace) -> int:
    with Store(args.store, create=False) as st:
        res = st.load(args.run)
    records = list(res.latest().values())
    if args.format == "json":
        print(formats.json_text({"header": res.header.to_json(), "records": exports.records_with_figures(res)}), end="")
        return EXIT_OK
    if args.format == "csv":
        views = run_views(res)
        print(formats.render_rows([{**flat_record(r), **views[r.id].figures()} for r in records], "csv"), end="")
        return EXIT_OK
    s = res.settings
    lines = [f"run {run_id(res.header)}  started {res.header.started}  "
             f"arraybench {res.header.arraybench_version}",
             f"machine {res.environment.fingerprint}; dtype {s.dtype}, threads {s.threads}"]
    # A run of several Python environments: which each is, and how each compares with the first.
    envs = res.header.environments
    if envs:
        lines += [f"environments {described(envs)}",
                  *(f"{line}." for line in environments.pair_lines([res]))]
    if args.format == "markdown":
        print("\n".join([f"## {lines[0]}", "", *(f"{line}  " for line in lines[1:])]) + "\n")
        print(render_markdown(records) if records else "no cases recorded")
        return EXIT_OK
    print("\n".join(lines) + "\n")
    if not records:
        print("no cases recorded")
    for i, (title, header, rows, notes) in enumerate(tables(records)):
        print("" if i == 0 else "\n", end="")
        terminal.print_table(header, rows, title)
        for note in notes:
            print(f"  {note}")
    return EXIT_OK


def cmd_export(args: argparse.Namespace) -> int:
    out = Path(args.output)
    if out.exists():
        raise UsageError(f"{str(out)!r} already exists; choose another -o")
    res = load(args.run, args.store)
    if args.format != "jsonl":
        data = exports.pytest_benchmark(res) if args.format == "pytest-benchmark" else exports.bmf(res)
        try:
            atomic_write_text(out, formats.json_text(data))
        except OSError as e:
            raise UsageError(f"cannot write {str(out)!r}: {e.strerror}") from None
        print(f"run {run_id(res.header)}: {len(exports.correct_records(res))} correct cases -> {out} "
              f"({args.format})", file=sys.stderr)
        return EXIT_OK
    try:
        # Its records are written in the current schema, so the copy's header says so.
        writer = ResultsWriter(out, dataclasses.replace(res.header, schema=RESULTS_SCHEMA))
    except OSError as e:
        raise UsageError(f"cannot write {str(out)!r}: {e.strerror}") from None
    for rec in res.records:
        writer.append(rec)
    writer.close()
    print(f"run {run_id(res.header)}: {len(res.records)} cases -> {out}", file=sys.stderr)
    return EXIT_OK


def cmd_import(args: argparse.Namespace) -> int:
    loaded = [load_results(p) for p in args.results]  # every file valid before any is stored
    with Store(args.store) as st:
        for res in loaded:
            for w in res.warnings:
                print(f"arraybench: warning: {w}", file=sys.stderr)
            # A run still writing its file is stored in part however much is imported now.
            running = res.path is not None and being_written(res.path)
            was = st.incomplete(run_id(res.header))
            rid, added = st.add_results(res, running=running)
            state = ("; its run is still writing it, so it stays marked incomplete" if running
                     else "; the run is whole in the store now" if was is not None else "")
            print(f"{res.path}: run {rid}, {added} of {len(res.records)} cases added{state}")
    return EXIT_OK


def cmd_push(args: argparse.Namespace) -> int:
    return copy_runs(args.runs, args.store, args.to, f"pushed to {redact(args.to)}")


def cmd_pull(args: argparse.Namespace) -> int:
    return copy_runs(args.runs, args.source, args.store, f"pulled from {redact(args.source)}")


def copy_runs(refs: list[str], source: str, dest: str, done: str) -> int:
    """Copy runs `refs` (every run when none) from `source` into `dest`, each with whichever of its
    records `dest` lacks: copying again adds nothing. Each run keeps its machine and environment.
    `done` ends each run's line ("pushed to URL")."""
    with Store(source, create=False) as src:
        rids = list(dict.fromkeys(src.resolve(ref) for ref in refs)) if refs else [r.id for r in src.runs()]
        if not rids:
            print(f"no runs in {src.name}")
            return EXIT_OK
        with Store(dest) as dst:
            for rid in rids:
                added, total = dst.copy_from(src, rid)
                partial = dst.incomplete(rid)
                print(f"run {rid}: {added} of {total} cases {done}"
                      + (f"; stored in part (`arraybench import {partial}` on its machine stores the rest)"
                         if partial is not None else ""))
    return EXIT_OK


COMMANDS = {"history": cmd_history, "show": cmd_show, "export": cmd_export, "import": cmd_import,
            "push": cmd_push, "pull": cmd_pull}
