#!/bin/sh
# nectar serve against llama.cpp's llama-server on the same weights (not a
# test): each server in turn, alone on the machine, with 8 slots, serves 1
# and then 8 concurrent streams of greedy completions; prints aggregate
# generated tokens/s and the client-side p50/p95 time to first token
# (tools/bench_serve_streams.py). Record `uptime` with the figures: the
# machine may be shared.
#
#   tools/bench_vs_llama_server.sh HF_DIR GGUF LLAMA_SERVER [TOKENS] [THREADS]
#
# HF_DIR: the Qwen3 folder nectar reads; GGUF: the same weights converted
# by llama.cpp's convert_hf_to_gguf.py (same dtype, e.g. bf16 or q8_0 from
# `nectar quantize`'s counterpart); LLAMA_SERVER: the llama-server binary
# (built from the same llama.cpp source as the CPU benchmark: cmake
# -DLLAMA_BUILD_SERVER=ON, target llama-server).
HF=${1:?usage: bench_vs_llama_server.sh HF_DIR GGUF LLAMA_SERVER [TOKENS] [THREADS]}
GGUF=${2:?GGUF file}
LLAMA=${3:?llama-server binary}
TOKENS=${4:-64}
THREADS=${5:-$(getconf _NPROCESSORS_ONLN)}
NECTAR=${NECTAR_BIN:-build/nectar}
PY=${PYTHON:-python3}
PORT=18931
CTX=512 # per slot: prompt + TOKENS fit

wait_up() { # url
    i=0
    while [ $i -lt 600 ]; do
        curl -s "$1/health" 2>/dev/null | grep -q '"ok"' && return 0
        sleep 0.5
        i=$((i + 1))
    done
    echo "server at $1 did not come up" >&2
    return 1
}

run() { # name
    printf '%-14s %-12s %-10s %-14s %-12s %-12s\n' server concurrency requests "agg tok/s" \
        "ttft p50 ms" "ttft p95 ms"
    for C in 1 8; do
        printf '%-14s ' "$1"
        $PY tools/bench_serve_streams.py "http://127.0.0.1:$PORT" "$C" "$TOKENS" 1
    done
}

echo "load: $(uptime)"
"$NECTAR" serve -m "$HF" --port $PORT --parallel 8 --ctx $CTX -t "$THREADS" >/dev/null 2>&1 &
pid=$!
if wait_up "http://127.0.0.1:$PORT"; then
    $PY tools/bench_serve_streams.py "http://127.0.0.1:$PORT" 1 8 1 >/dev/null # warm-up
    run nectar
fi
kill $pid
wait $pid 2>/dev/null
"$LLAMA" -m "$GGUF" --port $PORT -np 8 -c $((CTX * 8)) -t "$THREADS" --no-webui >/dev/null 2>&1 &
pid=$!
if wait_up "http://127.0.0.1:$PORT"; then
    $PY tools/bench_serve_streams.py "http://127.0.0.1:$PORT" 1 8 1 >/dev/null
    run llama-server
fi
kill $pid
wait $pid 2>/dev/null
echo "load: $(uptime)"
