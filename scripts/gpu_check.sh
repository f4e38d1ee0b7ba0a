#!/usr/bin/env bash
# Runs the CUDA tests and the GPU benchmark on a machine with a GPU but without this project's
# build dependencies (no Qt, no Eigen): the binaries are built elsewhere (same architecture,
# CUDA 13) and packed with `scripts/gpu_check.sh pack DIR`; `scripts/gpu_check.sh run DIR OUT`
# then runs on the GPU machine from that folder, writing logs and a table to OUT.
#
#   pack DIR   copy ensemble-cli, the CUDA test binaries and the shared libraries they need that
#              a CUDA image may lack (Qt Core/Test, ICU, ...) into DIR, plus gzipped MNIST when
#              it is installed here (about 30 MB in all)
#   run DIR OUT  nvidia-smi, the CUDA test suites, auto's calibration (bench --calibrate-auto),
#              then for W1 (spirals 2-32-32-2, batch 32, resample), W2 (MNIST 784-256-256-10,
#              batch 128) and W5 (the mnist-cnn preset): ensemble-cli bench on the GPU in FP32
#              and TF32, on the CPU and with backend.kind=auto, and PyTorch at its best
#              (bench/torch_bench.py --device cuda --graph: the step captured as a CUDA graph,
#              FP32 and TF32) and eager; the mnist-cnn recipe trained on the GPU in FP32 and
#              TF32; last the table (bench/run_bench.py --gpu-table) into OUT/table.md.
#              GPU_CHECK_PARTS="tests mlp cnn" picks parts.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)

pack() {
    local dir=$1 build=${BUILD_DIR:-$here/build}
    rm -rf "$dir" && mkdir -p "$dir/bin" "$dir/lib" "$dir/mnist"
    for t in app/ensemble-cli tests/tst_cuda_parity tests/tst_cuda_loader tests/tst_cuda_plan; do
        strip -o "$dir/bin/$(basename "$t")" "$build/$t"
    done
    # Every non-glibc, non-CUDA library the binaries link (the GPU image has its own CUDA),
    # xz-compressed: ICU's data alone is 30 MB and the call's tree is limited to 64 MiB.
    ldd "$dir"/bin/* | awk '/=> \// {print $3}' | sort -u |
        grep -v -E 'libc\.so|libm\.so|libdl|libpthread|librt|ld-linux|libcuda|libstdc\+\+|libgcc_s' |
        while read -r lib; do cp -L "$lib" "$dir/lib/"; done
    tar -C "$dir" -cJf "$dir/lib.tar.xz" lib && rm -rf "$dir/lib"
    local mnist=${ENSEMBLE_MNIST_DIR:-$HOME/.local/share/ensemblelab/mnist}
    for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte \
        t10k-labels-idx1-ubyte; do
        if [[ -f $mnist/$f ]]; then gzip -c "$mnist/$f" >"$dir/mnist/$f.gz"; fi
    done
    du -sh "$dir"
}

cli_rate() {  # ensemble-cli bench ARGS... -> member_steps_per_sec
    "$cli" bench "$@" 2>>"$out/bench.log" | sed -n 's/.*member_steps_per_sec=\([0-9.e+]*\).*/\1/p'
}

cli_auto() {  # ensemble-cli bench ARGS... with backend.kind=auto -> "RATE PICKED" (cpu|cuda)
    local report
    report=$("$cli" bench "$@" --set backend.kind=auto 2>>"$out/bench.log")
    echo "$(sed -n 's/.*member_steps_per_sec=\([0-9.e+]*\).*/\1/p' <<<"$report")" \
        "$(sed -n 's/^backend \(cuda\|cpu\).*/\1/p' <<<"$report")"
}

torch_rate() {  # bench/torch_bench.py ARGS... -> member_steps_per_sec
    "$py" "$here/bench/torch_bench.py" --device cuda --seconds 1 "$@" 2>>"$out/bench.log" |
        "$py" -c 'import json,sys; r=json.load(sys.stdin); print(r.get("member_steps_per_sec", r))'
}

# One workload at K members: ours in FP32, TF32, on the CPU and with auto; PyTorch's forms
# (bmm, vmap, group; group-cl = group with channels-last tensors) of torch_bench.py's workload
# TW captured as a CUDA graph in FP32 and TF32, and eager.
measure() {
    local w=$1 k=$2 tw=$3 forms=$4
    shift 4
    local form impl
    echo "$w $k ours-fp32 $(cli_rate "$@" --set backend.kind=cuda)" | tee -a "$out/bench.txt"
    echo "$w $k ours-tf32 $(cli_rate "$@" --set backend.kind=cuda --set backend.math=tf32)" |
        tee -a "$out/bench.txt"
    echo "$w $k ours-cpu $(cli_rate "$@" --set backend.kind=cpu)" | tee -a "$out/bench.txt"
    echo "$w $k ours-auto $(cli_auto "$@")" | tee -a "$out/bench.txt"
    for form in $forms; do
        impl=(--impl "${form%-cl}")
        if [[ $form == *-cl ]]; then impl+=(--channels-last); fi
        echo "$w $k torch-graph-fp32-$form $(torch_rate --workload "$tw" "${impl[@]}" \
            --members "$k" --graph)" | tee -a "$out/bench.txt"
        echo "$w $k torch-graph-tf32-$form $(torch_rate --workload "$tw" "${impl[@]}" \
            --members "$k" --graph --tf32)" | tee -a "$out/bench.txt"
        echo "$w $k torch-eager-$form $(torch_rate --workload "$tw" "${impl[@]}" \
            --members "$k")" | tee -a "$out/bench.txt"
    done
}

run() {
    local dir=$1
    out=$2
    mkdir -p /tmp/gpu_check && tar -C /tmp/gpu_check -xJf "$dir/lib.tar.xz"
    export LD_LIBRARY_PATH="/tmp/gpu_check/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
    export ENSEMBLE_MNIST_DIR="$dir/mnist" XDG_DATA_HOME=/tmp/gpu_check/xdg
    mkdir -p /tmp/gpu_check/xdg/ensemblelab && ln -sfn "$dir/mnist" /tmp/gpu_check/xdg/ensemblelab/mnist
    cli=$dir/bin/ensemble-cli
    py=${PYTHON:-python3}
    local parts=${GPU_CHECK_PARTS:-tests mlp cnn}
    nvidia-smi -L | tee "$out/device.txt"
    if [[ $parts == *tests* ]]; then
        for t in tst_cuda_loader tst_cuda_plan tst_cuda_parity; do
            echo "== $t"
            (cd /tmp && "$dir/bin/$t" -o "$out/$t.txt,txt" -o -,txt 2>&1 |
                grep -E "FAIL|SKIP|Totals|nMSE|Loc:" | tail -40)
        done
    fi
    # The calibration auto decides by, measured once here (bench --calibrate-auto), so that the
    # ours-auto rows use it rather than measuring on their first run.
    export XDG_CACHE_HOME=/tmp/gpu_check/cache
    "$cli" bench --calibrate-auto --config spirals 2>&1 | tee "$out/calibration.txt"
    echo "workload K impl member_steps_per_sec [auto's pick]" | tee -a "$out/bench.txt"
    if [[ $parts == *mlp* ]]; then
        for k in 1 10 100 1000; do
            measure W1 "$k" w1 "bmm vmap" \
                --config spirals --set ensemble.bootstrap=resample --set ensemble.members="$k" \
                --steps 400 --warmup 40 --repeat 3
        done
        for k in 1 8 32; do
            measure W2 "$k" w2 "bmm vmap" \
                --config mnist-mlp --set training.batch_size=128 --set ensemble.members="$k" \
                --steps 100 --warmup 10 --repeat 3
        done
    fi
    if [[ $parts == *cnn* ]]; then
        for k in 1 4 16; do
            measure W5 "$k" w5 "group group-cl vmap" \
                --config mnist-cnn --set ensemble.members="$k" --steps 60 --warmup 5 --repeat 3
        done
        # The recipe end to end on the GPU: 3 epochs, K = 4, evaluated on the 10,000 test images.
        /usr/bin/time -v "$cli" train --config mnist-cnn --set backend.kind=cuda \
            --metrics "$out/cnn_metrics.json" --export /tmp/gpu_check/cnn.safetensors \
            >"$out/cnn_train.log" 2>&1
        tail -5 "$out/cnn_train.log"
        grep -E "Elapsed|Maximum resident" "$out/cnn_train.log"
        "$cli" eval --weights /tmp/gpu_check/cnn.safetensors --set backend.kind=cuda 2>&1 | tail -12
        # The same in TF32: its accuracy must be the FP32 run's within noise.
        "$cli" train --config mnist-cnn --set backend.kind=cuda --set backend.math=tf32 \
            --metrics "$out/cnn_metrics_tf32.json" >"$out/cnn_train_tf32.log" 2>&1
        tail -3 "$out/cnn_train_tf32.log"
    fi
    echo
    "$py" "$here/bench/run_bench.py" --gpu-table "$out/bench.txt" \
        --gpu-name "$(head -1 "$out/device.txt")" | tee "$out/table.md"
}

case ${1:-} in
pack) pack "$2" ;;
run) run "$2" "$3" ;;
*) echo "usage: $0 pack DIR | run DIR OUT" >&2; exit 2 ;;
esac
