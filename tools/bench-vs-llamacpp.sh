#!/bin/sh
# nectar against llama.cpp on the same random weights (a benchmark, not a
# test). Builds llama.cpp from the source vendored in the llama-cpp-python
# sdist on PyPI (CMake, Release, GGML_NATIVE), converts a Qwen3 folder from
# `nectar gen-random` (tokenizer files included) to GGUF with llama.cpp's own
# convert_hf_to_gguf.py (bf16), quantizes it with llama-quantize (Q8_0 and
# --pure Q4_0: every matrix of the same type and bytes as nectar's q8/q4),
# then runs `nectar bench` and `llama-bench` in interleaved rounds, pp and tg
# each (a round: A B B A, each program's two runs averaged; the lower CPU
# share of the two is reported), and prints nectar/llama.cpp ratios with
# their spread and each run's CPU share over its timed test (llama.cpp's
# sampled from /proc every 20 ms, so its load is left out as nectar's is).
# Before each run it reads the machine's memory bandwidth level
# (tools/membw_level.c, 0.2 s): a round whose four readings differ by more
# than a quarter straddled a change of level, and the summary gives the
# ratio over the rounds that did not as well.
#
# usage: tools/bench-vs-llamacpp.sh MODEL_DIR [-w WORK] [-t THREADS] [-r ROUNDS]
#            [-p 512] [-n 128] [--types "bf16 bf16-fast q8 q4"] [--nectar build/nectar]
#            [--llama-no-amx] [--tune]
#   MODEL_DIR  a bf16 Qwen3 folder with tokenizer.json (nectar gen-random
#              --like qwen3-0.6b DIR, run where it finds the tokenizer)
#   WORK       where llama.cpp is built and the GGUF/nectar folders go
#              (default /tmp/nectar-vs-llamacpp); kept between runs, so a
#              second run only benchmarks
#   --types    bf16 (nectar's default, accurate contract: fp32 activations),
#              bf16-fast (NECTAR_BF16=fast: activations rounded to bf16, as
#              llama.cpp's bf16 path does), q8, q4 (default "bf16 q8 q4")
#   --llama-no-amx  also build llama.cpp's CPU backend for AVX-512 with VNNI
#              and BF16 but without AMX (what a Zen 4 gets; GGML_NATIVE off,
#              the ISA flags named) and run llama-bench on that one. On the
#              Sapphire Rapids VM this was written on, the native build's AMX
#              path died in ldtilecfg on Q8_0/Q4_0 (bf16 ran).
#   --tune     first `nectar bench --tune` once per type (bf16, bf16-fast, q8):
#              the decode kernel chosen by timing the model in the engine and
#              kept in nectar's wisdom file (NECTAR_WISDOM, else the user's
#              cache), which every later run reads
# Environment: PYTHON (default python3; the converter needs torch, numpy,
# sentencepiece, transformers: pip install them there), NECTAR_SIMD /
# NECTAR_NO_AMX as for nectar (llama.cpp built native uses the CPU's AMX
# when it has it, whatever these say), JOBS (build jobs, default 2).
set -eu

die() {
    echo "bench-vs-llamacpp: $*" >&2
    exit 1
}

HERE=$(cd "$(dirname "$0")" && pwd)
MODEL=""
WORK=/tmp/nectar-vs-llamacpp
THREADS=2
ROUNDS=3
PP=512
TG=128
TYPES="bf16 q8 q4"
NECTAR=build/nectar
NOAMX=0
TUNE=0
PYTHON=${PYTHON:-python3}
while [ $# -gt 0 ]; do
    case "$1" in
    -w) WORK=$2; shift 2 ;;
    -t) THREADS=$2; shift 2 ;;
    -r) ROUNDS=$2; shift 2 ;;
    -p) PP=$2; shift 2 ;;
    -n) TG=$2; shift 2 ;;
    --types) TYPES=$2; shift 2 ;;
    --nectar) NECTAR=$2; shift 2 ;;
    --llama-no-amx) NOAMX=1; shift ;;
    --tune) TUNE=1; shift ;;
    -*) die "unknown option $1" ;;
    *) MODEL=$1; shift ;;
    esac
done
[ -n "$MODEL" ] || die "usage: $0 MODEL_DIR [-w WORK] [-t N] [-r ROUNDS] [-p N] [-n N] [--types ...]"
[ -f "$MODEL/config.json" ] || die "$MODEL/config.json: not a model folder"
[ -f "$MODEL/tokenizer.json" ] || die "$MODEL/tokenizer.json: missing (the GGUF converter needs the tokenizer)"
[ -x "$NECTAR" ] || die "$NECTAR: not built (make)"
NECTAR=$(cd "$(dirname "$NECTAR")" && pwd)/$(basename "$NECTAR")
MODEL=$(cd "$MODEL" && pwd)
mkdir -p "$WORK"
cd "$WORK"

# 1. llama.cpp from the llama-cpp-python sdist
if [ ! -x build/bin/llama-bench ]; then
    if [ ! -d src ]; then
        "$PYTHON" -m pip download --no-binary :all: --no-deps llama-cpp-python -d sdist >/dev/null ||
            die "pip download llama-cpp-python failed"
        mkdir -p src
        tar xzf sdist/llama_cpp_python-*.tar.gz -C src --strip-components=1
    fi
    echo "building llama.cpp (Release, GGML_NATIVE; many CPU-minutes) ..."
    cmake -S src/vendor/llama.cpp -B build -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
        -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_OPENSSL=OFF \
        >cmake.log 2>&1 || die "cmake configure failed (see $WORK/cmake.log)"
    nice -n 10 cmake --build build -j "${JOBS:-2}" --target llama-bench llama-quantize \
        >build.log 2>&1 || die "llama.cpp build failed (see $WORK/build.log)"
fi
LLAMA_LIB=build/bin
if [ "$NOAMX" = 1 ]; then
    if [ ! -f build-noamx/bin/libggml-cpu.so ]; then
        echo "building llama.cpp's CPU backend without AMX ..."
        cmake -S src/vendor/llama.cpp -B build-noamx -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF \
            -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DGGML_AVX512=ON \
            -DGGML_AVX512_VBMI=ON -DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=ON -DGGML_AMX_TILE=OFF \
            -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF \
            -DLLAMA_BUILD_SERVER=OFF -DLLAMA_OPENSSL=OFF >cmake-noamx.log 2>&1 ||
            die "cmake configure (no AMX) failed (see $WORK/cmake-noamx.log)"
        nice -n 10 cmake --build build-noamx -j "${JOBS:-2}" --target ggml-cpu >build-noamx.log 2>&1 ||
            die "llama.cpp CPU backend build failed (see $WORK/build-noamx.log)"
    fi
    LLAMA_LIB=build-noamx/bin
fi
# the vendored commit, as the sdist's changelog names it
COMMIT=$(grep -o 'llama.cpp@[0-9a-f]*' src/CHANGELOG.md 2>/dev/null | head -1 | cut -d@ -f2)
echo "llama.cpp ${COMMIT:-unknown commit} (llama-cpp-python $(ls sdist | sed 's/llama_cpp_python-//; s/.tar.gz//'))"

# 2. the same weights for both: GGUF bf16 / Q8_0 / pure Q4_0, nectar q8 / q4
if [ ! -f gguf-bf16.gguf ]; then
    PYTHONPATH=src/vendor/llama.cpp/gguf-py "$PYTHON" src/vendor/llama.cpp/convert_hf_to_gguf.py \
        "$MODEL" --outtype bf16 --outfile gguf-bf16.gguf >convert.log 2>&1 ||
        die "convert_hf_to_gguf.py failed (see $WORK/convert.log)"
fi
[ -f gguf-q8.gguf ] || build/bin/llama-quantize gguf-bf16.gguf gguf-q8.gguf Q8_0 >quantize.log 2>&1 ||
    die "llama-quantize Q8_0 failed"
[ -f gguf-q4.gguf ] || build/bin/llama-quantize --pure gguf-bf16.gguf gguf-q4.gguf Q4_0 \
    >>quantize.log 2>&1 || die "llama-quantize Q4_0 failed"
for t in q8 q4; do
    [ -f "nectar-$t/model.safetensors" ] || "$NECTAR" quantize -m "$MODEL" --type "$t" -o "nectar-$t" >/dev/null
done

# the bandwidth level reader (none where it does not build: rounds then
# carry no level)
LEVEL=""
if ${CC:-cc} -O3 -march=native -pthread "$HERE/membw_level.c" -o membw_level 2>membw_level.log; then
    LEVEL=$WORK/membw_level
else
    echo "note: tools/membw_level.c did not build (see $WORK/membw_level.log); no level readings"
fi

# 3. interleaved rounds
"$PYTHON" - "$NECTAR" "$MODEL" "$THREADS" "$ROUNDS" "$PP" "$TG" "$TYPES" "$LLAMA_LIB" "$LEVEL" "$TUNE" <<'EOF'
import json, os, resource, statistics, subprocess, sys, threading, time

nectar, model, threads, rounds, pp, tg, types, llama_lib, level_bin, tune = sys.argv[1:11]
threads, rounds, pp, tg = int(threads), int(rounds), int(pp), int(tg)
folders = {"bf16": model, "bf16-fast": model, "q8": "nectar-q8", "q4": "nectar-q4"}


TICK = os.sysconf("SC_CLK_TCK")


def cpu_ticks(pid):
    """utime + stime of the whole process (every thread) from /proc, or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return None


def timed(cmd, env=None):
    """stdout of cmd, its CPU time / (wall time x threads), and the samples
    (seconds since start, CPU ticks) of its CPU time, taken every 20 ms."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                          env=env) as proc:
        out = []  # read while the process runs, so a full pipe cannot stall it
        reader = threading.Thread(target=lambda: out.append(proc.stdout.read()))
        reader.start()
        ticks = []
        while proc.poll() is None:
            c = cpu_ticks(proc.pid)
            if c is not None:
                ticks.append((time.perf_counter() - t0, c))
            time.sleep(0.02)
        reader.join()
        if proc.returncode:
            raise subprocess.CalledProcessError(proc.returncode, cmd)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return out[0], cpu / (wall * threads), ticks


def share_of_last(ticks, seconds):
    """CPU share over the last `seconds` of the samples (the timed test at
    the end of a run), or None when the samples cover too little of it."""
    if len(ticks) < 2 or seconds <= 0:
        return None
    t_end, c_end = ticks[-1]
    start = [tc for tc in ticks if tc[0] <= t_end - seconds]
    if not start:
        return None
    t_start, c_start = start[-1]
    return (c_end - c_start) / TICK / ((t_end - t_start) * threads)


def run_nectar(t, p, n):
    # bf16-fast: the same folder under NECTAR_BF16=fast (llama.cpp's bf16 precision)
    env = dict(os.environ, NECTAR_BF16="fast") if t == "bf16-fast" else None
    out, _, _ = timed([nectar, "bench", "-m", folders[t], "-t", str(threads), "-p", str(p),
                    "-n", str(n), "--runs", "1", "--bw-mib", "64", "--json"], env)
    j = json.loads(out)
    test = j["pp"] if p else j["tg"]
    return test["mean_tok_per_s"], test["cpu_share"], j["kernels"]


def run_llama(t, p, n):
    # the CPU share over the timed test, the last avg_ns of the run (its
    # load, Q4_0's repacking among it, and the warm-up run come before):
    # nectar's bench reports its own the same way; the whole process's
    # share where the samples do not cover the test
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.abspath(llama_lib))
    g = t.split("-")[0]  # bf16-fast: the bf16 GGUF
    out, whole, ticks = timed(["build/bin/llama-bench", "-m", f"gguf-{g}.gguf", "-t", str(threads),
                               "-p", str(p), "-n", str(n), "-r", "1", "-o", "json"], env)
    j = json.loads(out)[0]
    share = share_of_last(ticks, j["avg_ns"] / 1e9)
    return j["avg_ts"], whole if share is None else share, j.get("cpu_info", "")


def level():
    """The memory read bandwidth now (GB/s, membw_level over 256 MiB), or None."""
    if not level_bin:
        return None
    try:
        return float(subprocess.run([level_bin, str(threads), "256"], capture_output=True,
                                    text=True, check=True).stdout)
    except (OSError, ValueError, subprocess.CalledProcessError):
        return None


def one_level(levels):
    """Whether a round's readings agree within a quarter (no reading: unknown, no)."""
    return None not in levels and max(levels) <= 1.25 * min(levels)


if tune == "1":
    for t in types.split():
        if t == "q4":  # its rows are laid out for its kernel at load: nothing to time
            continue
        env = dict(os.environ, NECTAR_BF16="fast") if t == "bf16-fast" else None
        out = subprocess.run([nectar, "bench", "-m", folders[t], "-t", str(threads), "--tune",
                              "-p", "0", "-n", "1", "--runs", "1", "--bw-mib", "64"],
                             capture_output=True, text=True, env=env, check=True).stdout
        # its report: the table, or the line saying there is nothing to time
        table = False
        for line in out.splitlines():
            table = line.startswith("engine tuning") or (table and line.startswith("  "))
            if table or line.startswith("--tune"):
                print(line)

print(f"load average {os.getloadavg()[0]:.2f}, {threads} threads, {rounds} rounds, "
      f"llama.cpp CPU backend from {llama_lib}")
rows = []
for t in types.split():
    for test, p, n in (("pp", pp, 0), ("tg", 0, tg)):
        if p + n == 0:  # -p 0 or -n 0: that test is skipped
            continue
        ratios, runs = [], []
        for r in range(rounds):
            # A B B A within a round (which one leads alternates between
            # rounds), each program's two runs averaged: the memory
            # bandwidth of a shared VM moves between two levels a minute
            # or more apart, and a change between two single runs decided
            # a round's ratio (docs/performance.md)
            order = ("nectar", "llama") if r % 2 == 0 else ("llama", "nectar")
            got = {"nectar": [], "llama": []}
            levels = []
            for who in order + order[::-1]:
                levels.append(level())
                got[who].append(run_nectar(t, p, n) if who == "nectar" else run_llama(t, p, n))
            res = {who: (statistics.mean(g[0] for g in got[who]),
                         min(g[1] for g in got[who]), got[who][0][2]) for who in got}
            ratios.append(res["nectar"][0] / res["llama"][0])
            res["one_level"] = one_level(levels)
            runs.append(res)
            lv = "/".join("?" if x is None else f"{x:.0f}" for x in levels)
            each = {who: " / ".join(f"{g[0]:.2f}" for g in got[who]) for who in got}
            print(f"  {t} {test}{p or n} round {r + 1}: nectar ({res['nectar'][2]}) "
                  f"{res['nectar'][0]:.2f} tok/s ({each['nectar']}; CPU {res['nectar'][1]:.0%}), "
                  f"llama.cpp {res['llama'][0]:.2f} ({each['llama']}; CPU {res['llama'][1]:.0%}), "
                  f"ratio {ratios[-1]:.2f}, levels {lv} GB/s"
                  f"{'' if res['one_level'] else ' (level changed)' if None not in levels else ''}, "
                  f"load average {os.getloadavg()[0]:.2f}",
                  flush=True)
        ok = [x for x, res in zip(ratios, runs) if res["nectar"][1] >= 0.85 and res["llama"][1] >= 0.85]
        steady = [x for x, res in zip(ratios, runs)
                  if res["nectar"][1] >= 0.85 and res["llama"][1] >= 0.85 and res["one_level"]]
        rows.append((t, f"{test}{p or n}", ratios, ok, runs, steady))

print(f"\nload average {os.getloadavg()[0]:.2f}")
print("| weights | test | nectar tok/s | llama.cpp tok/s | nectar / llama.cpp (min-max) "
      "| rounds with both >= 85% CPU | and at one level (min-max) |")
print("|---|---|---|---|---|---|---|")
for t, test, ratios, ok, runs, steady in rows:
    nm = statistics.mean(r["nectar"][0] for r in runs)
    lm = statistics.mean(r["llama"][0] for r in runs)
    okm = f"{statistics.mean(ok):.2f} ({len(ok)})" if ok else "none"
    stm = (f"{statistics.mean(steady):.2f} ({len(steady)}; {min(steady):.2f}-{max(steady):.2f})"
           if steady else "none")
    print(f"| {t} | {test} | {nm:.2f} | {lm:.2f} | {statistics.median(ratios):.2f} "
          f"({min(ratios):.2f}-{max(ratios):.2f}) | {okm} | {stm} |")
EOF
