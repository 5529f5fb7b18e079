"""Out of core from the command line: ``dpmodels fit ols ... --data big.parquet --engine E``.

For each n, writes (if absent) a 10-column Parquet file with DuckDB's ``COPY`` from
``range(n)``: deterministic pseudo-random columns (integer hashing of the row number,
no random generator), in row groups of 1,000,000 rows::

    price   DOUBLE   a price-like response (a linear model of the others plus noise)
    size, age, dist, lot, income   DOUBLE   continuous covariates
    region (1..6), kind (1..4), rooms (1..6), year (1..10)   INTEGER   integer-coded factors

then runs, as a child process, for every engine and method::

    python -m dpmodels fit ols "price ~ size + age + dist + lot + income + C(region)
        + C(kind) + rooms + C(year)" --data FILE --schema SCHEMA --engine E --epsilon 1
        --seed 1 --method M --format json --out ...

and measures its wall time and peak resident memory (the child and all its descendants:
the sum of their RSS polled every 20 ms with psutil, and the kernel's ``ru_maxrss`` of the
largest one; the larger is reported), against DuckDB's own
``SELECT SUM(price), SUM(size), ... FROM read_parquet(FILE)`` over the same 10 columns (wall
time, the best of 3 runs in this process, page cache warm).  Goals: peak < 2 GiB and wall
time <= 5x the DuckDB SUM.

Run::

    PYTHONPATH=. python benchmarks/out_of_core.py --sizes 1e6,1e7,1e8 --delete
    PYTHONPATH=. python benchmarks/out_of_core.py --sizes 1e6 --engines duckdb,polars

The table is printed and written to ``benchmarks/results/out_of_core.md`` (``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import subprocess
import sys
import tempfile
import threading
import time

import duckdb
import psutil

REPO = pathlib.Path(__file__).resolve().parents[1]
FORMULA = ("price ~ size + age + dist + lot + income + C(region) + C(kind) + rooms "
           "+ C(year)")
COLUMNS = ["price", "size", "age", "dist", "lot", "income", "region", "kind", "rooms", "year"]
SCHEMA = """
[variables.price]
bounds = [0, 1500000]
[variables.size]
bounds = [0, 5000]
[variables.age]
bounds = [0, 100]
[variables.dist]
bounds = [0, 50]
[variables.lot]
bounds = [0, 2000]
[variables.income]
bounds = [0, 250000]
[variables.region]
levels = [1, 2, 3, 4, 5, 6]
[variables.kind]
levels = [1, 2, 3, 4]
[variables.rooms]
levels = [1, 2, 3, 4, 5, 6]
[variables.year]
levels = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
"""
GIB = 2**30
ROW_GROUP = 1_000_000

# u(i, k): a deterministic pseudo-uniform number in [0, 1) from the row number i and the
# column's salt k: an affine map, then two squarings modulo the prime 2^31 - 1 (every
# product below 2^62: exact BIGINT arithmetic)
_MACROS = """
CREATE OR REPLACE MACRO mix(x) AS (x * x + 11) % 2147483647;
CREATE OR REPLACE MACRO u(i, k) AS
    mix(mix((i * (69621 + 1000 * k) + 7 * k + 1) % 2147483647))::DOUBLE / 2147483647.0;
"""
_SELECT = """
WITH r AS (
    SELECT 300 + 3700 * u(i, 1) AS size, 100 * u(i, 2) AS age, 50 * u(i, 3) AS dist,
           100 + 1900 * u(i, 4) AS lot, 20000 + 180000 * u(i, 5) AS income,
           1 + CAST(floor(6 * u(i, 6)) AS INTEGER) AS region,
           1 + CAST(floor(4 * u(i, 7)) AS INTEGER) AS kind,
           1 + CAST(floor(6 * u(i, 8)) AS INTEGER) AS rooms,
           1 + CAST(floor(10 * u(i, 9)) AS INTEGER) AS year,
           (u(i, 10) + u(i, 11) + u(i, 12) - 1.5) AS e
    FROM range({n}) t(i)
)
SELECT greatest(10000, 50000 + 150 * size - 800 * age - 3000 * dist + 40 * lot
                       + 1.5 * income + 20000 * region - 15000 * kind + 10000 * rooms
                       + 5000 * year + 100000 * e) AS price,
       size, age, dist, lot, income, region, kind, rooms, year
FROM r
"""


def write_file(path: pathlib.Path, n: int) -> float:
    """Write the n-row file (if absent); return the seconds it took (0 if it existed)."""
    if path.exists():
        return 0.0
    tmp = path.with_name(path.name + ".part")
    t0 = time.perf_counter()
    con = duckdb.connect()
    con.execute(_MACROS)
    con.execute(f"COPY ({_SELECT.format(n=n)}) TO '{tmp}' "
                f"(FORMAT parquet, ROW_GROUP_SIZE {ROW_GROUP})")
    con.close()
    os.replace(tmp, path)
    return time.perf_counter() - t0


def duckdb_sum(path: pathlib.Path, repeat: int = 3) -> float:
    """Best wall time of DuckDB's SUM over the 10 columns (page cache warm)."""
    sums = ", ".join(f"SUM({c})" for c in COLUMNS)
    best = float("inf")
    for _ in range(repeat):
        con = duckdb.connect()
        t0 = time.perf_counter()
        con.execute(f"SELECT {sums} FROM read_parquet('{path}')").fetchall()
        best = min(best, time.perf_counter() - t0)
        con.close()
    return best


def _tree_rss(proc: psutil.Process) -> int:
    total = 0
    try:
        procs = [proc, *proc.children(recursive=True)]
    except psutil.Error:
        return 0
    for p in procs:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total


def run_child(argv: list[str], timeout: float) -> dict:
    """Run ``argv``; wall seconds, peak RSS in bytes (tree sum or largest process), status."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    t0 = time.perf_counter()
    child = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    ps = psutil.Process(child.pid)
    peak = [0]
    done = threading.Event()

    def poll():
        while not done.is_set():
            peak[0] = max(peak[0], _tree_rss(ps))
            done.wait(0.02)

    watcher = threading.Thread(target=poll, daemon=True)
    watcher.start()
    out: list[str] = []
    err: list[str] = []
    readers = [threading.Thread(target=lambda s=s, b=b: b.append(s.read()), daemon=True)
               for s, b in ((child.stdout, out), (child.stderr, err))]
    for r in readers:
        r.start()
    status, maxrss_kib, cpu = None, 0, 0.0
    deadline = time.monotonic() + timeout
    while status is None:
        pid, st, usage = os.wait4(child.pid, os.WNOHANG)
        if pid:
            status, maxrss_kib = os.waitstatus_to_exitcode(st), usage.ru_maxrss
            cpu = usage.ru_utime + usage.ru_stime
            break
        if time.monotonic() > deadline:
            for p in [ps, *ps.children(recursive=True)]:
                try:
                    p.kill()
                except psutil.Error:
                    pass
            pid, st, usage = os.wait4(child.pid, 0)
            status, maxrss_kib = "timeout", usage.ru_maxrss
            break
        time.sleep(0.01)
    wall = time.perf_counter() - t0
    child.returncode = status if isinstance(status, int) else -9
    done.set()
    watcher.join()
    for r in readers:
        r.join(5)
    return {"wall": wall, "cpu": cpu, "peak": max(peak[0], maxrss_kib * 1024), "status": status,
            "stderr": "".join(err)[-2000:], "stdout": "".join(out)[-2000:]}


def fit_argv(path, schema, engine, method, out) -> list[str]:
    return [sys.executable, "-m", "dpmodels", "fit", "ols", FORMULA, "--data", str(path),
            "--schema", str(schema), "--engine", engine, "--epsilon", "1", "--seed", "1",
            "--method", method, "--format", "json", "--out", str(out)]


def _n_label(n: int) -> str:
    e = len(str(n)) - 1
    return f"1e{e}" if n == 10**e else f"{n:,}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1e6,1e7", help="row counts, e.g. 1e6,1e7,1e8")
    ap.add_argument("--path", default=str(pathlib.Path(tempfile.gettempdir())
                                          / "dpmodels_ooc_{n}.parquet"),
                    help="the Parquet file; {n} is replaced by the row count "
                         "(default: %(default)s)")
    ap.add_argument("--engines", default="duckdb,polars,dask")
    ap.add_argument("--methods", default="auto,histogram")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per CLI run")
    ap.add_argument("--histogram-timeout", type=float, default=60.0,
                    help="seconds per --method histogram run (its fit on millions of cells "
                         "is slow; a stopped run shows its wall time as a lower bound)")
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "out_of_core.md"))
    ap.add_argument("--delete", action="store_true", help="delete the data files at the end")
    args = ap.parse_args(argv)
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    engines = args.engines.split(",")
    methods = args.methods.split(",")
    work = pathlib.Path(tempfile.mkdtemp(prefix="dpmodels_ooc_"))
    schema = work / "schema.toml"
    schema.write_text(SCHEMA)

    startup = run_child([sys.executable, "-m", "dpmodels", "--version"], 120)
    head = ("| n | engine | method | release chosen | wall s | cpu s | peak GiB | DuckDB SUM s "
            "| wall / SUM | peak < 2 GiB | <= 5x SUM |")
    lines = [head, "|---:|---|---|---|---:|---:|---:|---:|---:|---|---|"]
    print(f"CLI start-up (python -m dpmodels --version): {startup['wall']:.2f} s, "
          f"{startup['peak'] / GIB:.2f} GiB", flush=True)
    print(head, flush=True)
    notes = []
    for n in sizes:
        path = pathlib.Path(args.path.format(n=n))
        wrote = write_file(path, n)
        size = path.stat().st_size
        notes.append(f"n = {_n_label(n)}: file {size / GIB:.2f} GiB"
                     + (f", written in {wrote:.0f} s" if wrote else " (existed)"))
        base = duckdb_sum(path)
        for engine in engines:
            for method in methods:
                out = work / f"{n}_{engine}_{method}.json"
                cap = args.histogram_timeout if method == "histogram" else args.timeout
                got = run_child(fit_argv(path, schema, engine, method, out), cap)
                chosen = "-"
                if got["status"] == 0:
                    doc = json.loads(out.read_text())
                    chosen = doc["privacy"]["type"].replace("Report", "")
                    wall = f"{got['wall']:.1f}"
                else:
                    wall = (f"> {got['wall']:.0f} (stopped)" if got["status"] == "timeout"
                            else f"{got['wall']:.1f} (status {got['status']})")
                    notes.append(f"n={n} {engine} {method}: status {got['status']}: "
                                 f"{got['stderr'].strip().splitlines()[-1:]}")
                ratio = got["wall"] / base
                ok_mem = "yes" if got["peak"] < 2 * GIB else \
                    f"no ({got['peak'] / (2 * GIB):.1f}x)"
                ok_time = "yes" if ratio <= 5 else f"no ({ratio / 5:.1f}x over)"
                row = (f"| {_n_label(n)} | {engine} | {method} | {chosen} | {wall} "
                       f"| {got['cpu']:.1f} "
                       f"| {got['peak'] / GIB:.2f} | {base:.2f} | {ratio:.1f}x | {ok_mem} "
                       f"| {ok_time} |")
                lines.append(row)
                print(row, flush=True)
        if args.delete:
            path.unlink()
    text = "\n".join([
        "# Out of core from the command line",
        "",
        f"`python benchmarks/out_of_core.py --sizes {args.sizes} --engines {args.engines} "
        f"--methods {args.methods}`",
        f"on {platform.node() or 'this machine'}: {os.cpu_count()} cores, "
        f"{psutil.virtual_memory().total / GIB:.0f} GiB RAM, Python "
        f"{platform.python_version()}, DuckDB {duckdb.__version__}; "
        f"load average at the end {os.getloadavg()[0]:.1f}.",
        "",
        f"Formula: `{FORMULA}`; `--epsilon 1 --seed 1 --format json`.",
        f"CLI start-up alone (`python -m dpmodels --version`): {startup['wall']:.2f} s, "
        f"{startup['peak'] / GIB:.2f} GiB.",
        "",
        *lines,
        "",
        *[f"* {x}" for x in notes],
        "",
    ])
    pathlib.Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    pathlib.Path(args.out).write_text(text)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
