"""`arraybench list` and `arraybench env`: what can run here, and what this machine and its software are."""

from __future__ import annotations

import argparse
from typing import Any

from arraybench import comparison
from arraybench.backends import BACKENDS
from arraybench.cli.arguments import add_format_option
from arraybench.cli.exits import EXIT_OK
from arraybench.execution.probe import probe
from arraybench.machine import host
from arraybench.machine.device_survey import counts as survey_counts
from arraybench.machine.device_survey import devices_text
from arraybench.output import formats
from arraybench.planning.settings import default_threads
from arraybench.workloads import WORKLOADS
from arraybench.workloads.userfile import load_workload_file


def add_parsers(sub: Any) -> None:
    """`list` and `env`."""
    lst = sub.add_parser("list", help="workloads, and backends with versions, devices or why unavailable")
    lst.add_argument("--workload-file", help="also list the workloads this Python file defines")
    add_format_option(lst)
    env = sub.add_parser("env", help="machine, software and the settings that change results")
    add_format_option(env)
    env.add_argument("--json", action="store_const", dest="format", const="json", help="same as --format json")
    env.add_argument("--threads", type=int,
                     help=f"thread count to verify (default: the {default_threads()} usable cores)")


def workload_rows(workload_file: str | None) -> list[dict[str, Any]]:
    """Every workload (built-in, and `workload_file`'s): its presets and what runs it where."""
    workloads = dict(WORKLOADS)
    if workload_file:
        workloads.update(load_workload_file(workload_file))
    rows = []
    for wl in workloads.values():
        backends = {}
        for b in BACKENDS:
            modes = [m for (bb, m) in wl.impls if bb == b]
            why = {m: r for (bb, m), r in wl.unsupported.items() if bb == b}
            if modes or why:
                backends[b] = {"modes": modes, "unsupported": why}
        rows.append({"workload": wl.name, "description": wl.description, "size_param": wl.size_param,
                     "presets": list(wl.presets), "backends": backends})
    return rows


def backend_rows() -> list[dict[str, Any]]:
    """Every backend: version, and the devices of each kind it sees where it runs, or the reason
    (and fix) where not."""
    rows = []
    for name, status in probe(survey=True).items():
        cls = BACKENDS[name]
        info = status["info"]
        found = status.get("devices") or []
        rows.append({"backend": name, "version": info.get("version") or cls.version(),
                     "available": status["available"],
                     "device_kinds": survey_counts(found) if status["available"] else {},
                     "devices": found if status["available"] else [],
                     "survey": status.get("survey_problem") or None,
                     "jit": cls.jit_name, "reason": status["reason"] or None})
    return rows


def cmd_list(args: argparse.Namespace) -> int:
    workloads, backends = workload_rows(args.workload_file), backend_rows()
    if args.format == "json":
        print(formats.json_text({"workloads": workloads, "backends": backends}), end="")
    elif args.format == "csv":
        # One flat table for tools: a row per workload and backend that has something to say.
        by_name = {b["backend"]: b for b in backends}
        rows = [{"workload": w["workload"], "size_param": w["size_param"], "presets": ",".join(w["presets"]),
                 "backend": b, "version": by_name[b]["version"], "available": by_name[b]["available"],
                 "modes": ",".join(s["modes"]),
                 "unsupported": "; ".join(f"{m}: {r}" for m, r in s["unsupported"].items())}
                for w in workloads for b, s in w["backends"].items()]
        print(formats.render_rows(rows, "csv"), end="")
    elif args.format == "markdown":
        wl_rows = [{"workload": w["workload"], "description": w["description"], "size parameter": w["size_param"],
                    "presets": ", ".join(w["presets"]),
                    "backends": "; ".join(f"{b}: {', '.join(s['modes']) or '—'}" for b, s in w["backends"].items())}
                   for w in workloads]
        be_rows = [{"backend": b["backend"], "version": b["version"] or "not installed",
                    "status": (f"available; sees {devices_text(b['devices']) or 'no device'}" if b["available"]
                               else f"unavailable: {b['reason']}"),
                    "JIT": b["jit"] or "—"} for b in backends]
        print("## Workloads\n\n" + formats.render_rows(wl_rows, "markdown")
              + "\n## Backends\n\n" + formats.render_rows(be_rows, "markdown"), end="")
    else:
        print_list(workloads, backends)
    return EXIT_OK


def print_list(workloads: list[dict[str, Any]], backends: list[dict[str, Any]]) -> None:
    print("Workloads")
    for w in workloads:
        print(f"  {w['workload']:<18} {w['description']}")
        print(f"  {'':<18} size parameter {w['size_param']!r}; presets: {', '.join(w['presets'])}")
        for b, s in w["backends"].items():
            why = [f"{m}: {r}" for m, r in s["unsupported"].items()]
            print(f"  {'':<18}   {b:<11} {', '.join(s['modes']) or '—'}" + (f"  ({'; '.join(why)})" if why else ""))
    print("\nBackends")
    for b in backends:
        version = b["version"] or "not installed"
        if b["available"]:
            seen = devices_text(b["devices"]) or f"no device ({b['survey']})"
            print(f"  {b['backend']:<11} {version:<14} available; sees {seen}; JIT: {b['jit'] or '—'}")
        else:
            print(f"  {b['backend']:<11} {version:<14} unavailable: {b['reason']}")


def cmd_env(args: argparse.Namespace) -> int:
    threads = args.threads or default_threads()
    env = host.collect()
    env["backends"] = probe(threads=threads, survey=True)
    if args.format == "json":
        print(formats.json_text(env), end="")
    elif args.format in ("csv", "markdown"):
        rows = [{"key": k, "value": v} for k, v in comparison.flatten(env).items()]
        print(formats.render_rows(rows, args.format), end="")
    else:
        print_env(env, threads)
    return EXIT_OK


# The backend settings that change results, shown beside each backend's version.
SETTINGS_SHOWN = ("x64", "tf32", "matmul_precision", "float32_matmul_precision", "synchronous_execution",
                  "threading_layer")


def print_env(env: dict[str, Any], threads: int) -> None:
    freq = env["cpu_frequency"]
    print(f"machine   {host.fingerprint(env)}")
    print(f"cpu       {env['cpu_model']}; {env['cpu_logical']} logical, {env['cpu_physical']} physical, "
          f"{env['cpu_affinity']} usable")
    print(f"clock     {freq['current_mhz'] or '?'} MHz now "
          f"(min {freq['min_mhz'] or '?'}, max {freq['max_mhz'] or '?'}); "
          f"governor {freq['governor'] or 'unknown'}")
    print(f"simd      {' '.join(env['cpu_flags']) or 'none known'}")
    print(f"memory    {env['memory_bytes'] / 2**30:.1f} GiB")
    print(f"os        {env['os']}; Python {env['python']}")
    for g in env["gpus"]:
        print(f"gpu {g.get('index', '')}     {g['name']} {g['memory']} driver {g['driver']}"
              + (f"; PCI {g['pci_bus_id']}" if g.get("pci_bus_id") else ""))
    for link in env.get("gpu_links", []):
        print(f"link      gpu {link['gpus'][0]} ↔ gpu {link['gpus'][1]}: {link['text']}")
    for k, v in env["env"].items():
        print(f"env       {k}={v}")
    print(f"\nbackends at --threads {threads}:")
    for name, st in env["backends"].items():
        info = st["info"]
        if not st["available"]:
            print(f"  {name:<11} unavailable: {st['reason']}")
            continue
        extras = {k: v for k, v in info.items() if k in SETTINGS_SHOWN}
        blas = "; ".join(f"{b['internal_api']} {b['version']} {b['num_threads']} threads" for b in info.get("blas", []))
        print(f"  {name:<11} {info.get('version')}: threads verified {info.get('threads_verified')}"
              + (f"; {extras}" if extras else "") + (f"; BLAS: {blas}" if blas else ""))
        if st.get("devices"):
            print(f"  {'':<11} sees {devices_text(st['devices'])}")


COMMANDS = {"list": cmd_list, "env": cmd_env}
