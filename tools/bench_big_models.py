#!/usr/bin/env python3
"""nectar against llama.cpp on one big model's identical weights: load time
(page-cache cold and warm), peak RSS, pp and tg, in interleaved rounds (a
benchmark, not a test; docs/performance.md, "8B, 14B and 32B on a 24 GB
machine").

The two files hold the same weight bytes: the nectar folder from
`nectar gen-random --like qwen3-8b --type q4 DIR`, the GGUF from
`tools/gguf_from_nectar.py DIR OUT.gguf`. Each round runs, for each program
in turn (nectar first in odd rounds, llama.cpp first in even ones):

1. cold load: the model's files are dropped from the page cache
   (posix_fadvise(POSIX_FADV_DONTNEED) on each file, after which `fincore`
   must report it below 1% resident, else the round says so), then a
   one-token run: `nectar run -p Hi -n 1` / `llama-simple -n 1 Hi`. The
   figure is that process's wall time (start to exit: weights opened, the
   prompt token and one generated), and the program's own load figure
   beside it (nectar: "load X s"; llama.cpp: "load time", which runs to the
   end of the first evaluation);
2. warm load: the same run again, the files now cached;
3. `nectar bench -p P -n N --runs 1` / `llama-bench -p P -n N -r 1`: pp and
   tg in tokens/s, under /usr/bin/time -v for the peak RSS, with the CPU
   share of the whole process ((user + sys) / (wall x threads)) and the load
   average before and after.

usage: python tools/bench_big_models.py --folder DIR --gguf FILE
           [--nectar build/nectar] [--llama-bin DIR] [-t 2] [-r 2] [-p 512]
           [-n 128] [--label "8B q4"] [--json OUT.jsonl] [--llama-first] [--llama-repack 0]
   --llama-bin  llama.cpp's build/bin (llama-bench, llama-simple and the
                shared libraries); default /tmp/nectar-vs-llamacpp/build/bin
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import time


def files_of(path):
    if os.path.isdir(path):
        return sorted(glob.glob(os.path.join(path, "*.safetensors")))
    return [path]


def evict(path):
    """Drops the files' pages from the page cache; returns the resident
    fraction fincore reports afterwards (None when fincore is missing)."""
    total = resident = 0
    for f in files_of(path):
        fd = os.open(f, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
        try:
            out = subprocess.run(["fincore", "-b", "-n", "-o", "RES,SIZE", f], capture_output=True,
                                 text=True, check=True).stdout.split()
            resident += int(out[0])
            total += int(out[1])
        except (OSError, subprocess.CalledProcessError, IndexError, ValueError):
            return None
    return resident / total if total else None


def timed(cmd, threads, env=None):
    """(stdout, stderr, wall s, CPU share, peak RSS bytes) of cmd under
    /usr/bin/time -v."""
    t0 = time.perf_counter()
    r = subprocess.run(["/usr/bin/time", "-v"] + cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit(f"bench_big_models: {' '.join(cmd)} failed:\n{r.stderr[-3000:]}")
    err = r.stderr

    def field(name):
        m = re.search(rf"{re.escape(name)}: ([0-9.:]+)", err)
        return m.group(1) if m else "0"

    cpu = float(field("User time (seconds)")) + float(field("System time (seconds)"))
    rss = int(field("Maximum resident set size (kbytes)")) * 1024
    return r.stdout, err, wall, cpu / (wall * threads), rss


class Nectar:
    name = "nectar"

    def __init__(self, a):
        self.bin, self.folder, self.t = a.nectar, a.folder, a.threads

    def one_token(self):
        _, err, wall, share, rss = timed([self.bin, "run", "-m", self.folder, "-t", str(self.t),
                                          "-p", "Hi", "-n", "1", "--temp", "0"], self.t)
        m = re.search(r"load ([0-9.]+) s", err)
        return wall, float(m.group(1)) if m else None, rss

    def bench(self, p, n):
        out, _, wall, share, rss = timed([self.bin, "bench", "-m", self.folder, "-t", str(self.t),
                                          "-p", str(p), "-n", str(n), "--runs", "1",
                                          "--bw-mib", "64", "--json"], self.t)
        j = json.loads(out)
        self.shares = (j["pp"]["cpu_share"], j["tg"]["cpu_share"])  # its own, per test
        return j["pp"]["mean_tok_per_s"], j["tg"]["mean_tok_per_s"], share, rss, wall


class Llama:
    name = "llama.cpp"

    def __init__(self, a):
        self.bin, self.gguf, self.t, self.repack = a.llama_bin, a.gguf, a.threads, a.llama_repack
        self.env = dict(os.environ, LD_LIBRARY_PATH=a.llama_bin)

    def one_token(self):
        if not self.repack:  # llama-simple has no switch for it: llama-bench's one-token test
            _, err, wall, share, rss = timed(self.llama_bench(0, 1) + ["--no-warmup"], self.t,
                                             self.env)
            return wall, None, rss
        _, err, wall, share, rss = timed([os.path.join(self.bin, "llama-simple"), "-m", self.gguf,
                                          "-n", "1", "Hi"], self.t, self.env)
        m = re.search(r"load time =\s*([0-9.]+) ms", err)
        return wall, float(m.group(1)) / 1e3 if m else None, rss

    def llama_bench(self, p, n):
        return [os.path.join(self.bin, "llama-bench"), "-m", self.gguf, "-t", str(self.t), "-p",
                str(p), "-n", str(n), "-r", "1", "-o", "json", "--repack", str(self.repack)]

    def bench(self, p, n):
        out, _, wall, share, rss = timed(self.llama_bench(p, n), self.t, self.env)
        rows = json.loads(out)
        pp = next(r["avg_ts"] for r in rows if r["n_prompt"] > 0)
        tg = next(r["avg_ts"] for r in rows if r["n_gen"] > 0)
        return pp, tg, share, rss, wall


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--folder", required=True)
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--nectar", default="build/nectar")
    ap.add_argument("--llama-bin", default="/tmp/nectar-vs-llamacpp/build/bin")
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("-r", "--rounds", type=int, default=2)
    ap.add_argument("-p", type=int, default=512)
    ap.add_argument("-n", type=int, default=128)
    ap.add_argument("--label", default="")
    ap.add_argument("--llama-first", action="store_true",
                    help="llama.cpp first in odd rounds (a one-round run after a nectar-first one)")
    ap.add_argument("--json", help="append one JSON line per program and round")
    ap.add_argument("--llama-repack", type=int, choices=(0, 1), default=1,
                    help="llama.cpp's --repack (default 1, its own default): 0 keeps only the "
                         "mapped file, for a Q4_0 model over half the memory (its repacked copy "
                         "would double it); the one-token runs are then llama-bench -p 0 -n 1")
    a = ap.parse_args()
    a.llama_bin = os.path.abspath(a.llama_bin)
    programs = {"nectar": Nectar(a), "llama.cpp": Llama(a)}
    paths = {"nectar": a.folder, "llama.cpp": a.gguf}
    print(f"{a.label}: {a.threads} threads, {a.rounds} rounds, load average "
          f"{os.getloadavg()[0]:.2f}", flush=True)
    rows = []
    for r in range(a.rounds):
        order = ("nectar", "llama.cpp") if (r + a.llama_first) % 2 == 0 else ("llama.cpp", "nectar")
        for who in order:
            prog = programs[who]
            left = evict(paths[who])
            cold_wall, cold_own, cold_rss = prog.one_token()
            warm_wall, warm_own, _ = prog.one_token()
            la0 = os.getloadavg()[0]
            pp, tg, share, rss, wall = prog.bench(a.p, a.n)
            la1 = os.getloadavg()[0]
            row = dict(label=a.label, round=r + 1, program=who, resident_after_evict=left,
                       cold_s=cold_wall, cold_own_s=cold_own, warm_s=warm_wall,
                       warm_own_s=warm_own, pp=pp, tg=tg, cpu_share=share, peak_rss=rss,
                       one_token_rss=cold_rss, bench_wall_s=wall, load_avg=(la0, la1),
                       test_cpu_shares=getattr(prog, "shares", None))
            rows.append(row)
            own = lambda x: "?" if x is None else f"{x:.2f}"  # noqa: E731
            print(f"  round {r + 1} {who}: cold {cold_wall:.1f} s ({own(cold_own)} own; "
                  f"{left if left is None else f'{left:.1%}'} resident after evict), warm "
                  f"{warm_wall:.1f} s ({own(warm_own)} own), pp{a.p} {pp:.2f}, tg{a.n} {tg:.2f} tok/s, "
                  f"CPU {share:.0%}, peak RSS {rss / 2**30:.2f} GiB, load avg {la0:.1f}->{la1:.1f}",
                  flush=True)
            if a.json:
                with open(a.json, "a") as f:
                    f.write(json.dumps(row) + "\n")
    print(f"\n| {a.label} | cold load s | warm load s | peak RSS GiB | pp{a.p} tok/s | "
          f"tg{a.n} tok/s | CPU share | load avg |")
    print("|---|---|---|---|---|---|---|---|")
    for row in rows:
        print(f"| {row['program']} (round {row['round']}) | {row['cold_s']:.1f} | "
              f"{row['warm_s']:.1f} | {row['peak_rss'] / 2**30:.2f} | {row['pp']:.2f} | "
              f"{row['tg']:.2f} | {row['cpu_share']:.0%} | {row['load_avg'][0]:.1f}-"
              f"{row['load_avg'][1]:.1f} |")


if __name__ == "__main__":
    main()
