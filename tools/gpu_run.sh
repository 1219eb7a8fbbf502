#!/usr/bin/env bash
# The GPU part in one go, from a build made on the development machine and carried to the GPU machine:
# the device list, the conformance suite on every device (CUDA, OpenCL and Vulkan on the GPU), then the
# benchmarks of every GPU backend and the PyTorch/Triton/cuBLAS anchors in the same run.
#
#   tools/gpu_run.sh [STEP...]      steps: devices conformance bench latency anchors tune tune-check vk-clocks
#                                   vk-coop f16-bound f16-tail old-new row-variants python custom-op
#                                   (default: devices conformance bench anchors)
#
# Environment: TRIREME_GPU_BUILD (default build-gpu, made by `make gpu-build`, which builds the tools the latency
# step runs), OUT (where logs go; the device
# tool sets it), CONF_DEVICES and BENCH_DEVICES (default gpus: every GPU of every backend; "all" adds
# PoCL and the CPU), BENCH_SIZES (default quick), BENCH_OPS (default all), BENCH_REPS (default: the bench's
# own), BENCH_TAG (suffix of the bench's file names, so two bench steps of one run keep both), TUNE_DEVICES
# (default gpus), TRIREME_GPU_BUILD_OLD, OLDNEW_ROUNDS and OLDNEW_BENCHES (old-new: the build before a change, rounds, benches), TUNE_OPS (default "matmul softmax"), TUNE_SHAPES and TUNE_DTYPES (the matmul tuning's
# shapes and signatures; with TUNE_SHAPES set, the extra f32 8192x4096x6144 job is left out), TUNECHECK_OPS and
# TUNECHECK_SIZES (tune-check's benches and sizes), VK_COOP_MODES (vk-coop's variants, default "coop_khr coop_nv cm2"),
# ROW_THREADS (row-variants: thread counts tried beside the heuristic's, e.g. "256 512").
#
# tune: one shape per power of two over the benchmark's matmul and softmax sizes (docs/ops.md); a tuning bucket is a
# quarter octave (core/tune.h), so every benchmark size finds a tuned entry of its own bucket or a stand-in from the
# nearest one; tune-check: the bench at sizes the tuner did not time, once with the database and once without it,
# side by side (a tuned config must not lose to the default by more than noise).
# At most 8 files come back from $OUT, so every step's progress (stderr) goes to one log, $OUT/stderr.log, and
# the JSON reports, samples and plots end up in $OUT/reports.tar (`tar -xf` it to read them or --replot).
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${TRIREME_GPU_BUILD:-build-gpu}
OUT=${OUT:-out}
SIZES=${BENCH_SIZES:-quick}
mkdir -p "$OUT"
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(devices conformance bench anchors)
ERR="$OUT/stderr.log"

# The GPU machine has NVIDIA's Vulkan driver but no loader, and NVIDIA's ICD (libGLX_nvidia) needs libglvnd:
# unpack the carried Debian packages (README, "GPU runs", says how .gl/ is filled).
if compgen -G ".gl/*.deb" >/dev/null; then
  for f in .gl/*.deb; do dpkg -x "$f" /; done
  ldconfig
fi
for icd in /usr/share/vulkan/icd.d/nvidia_icd.json /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json \
           /etc/vulkan/icd.d/nvidia_icd.json; do
  if [ -z "${VK_DRIVER_FILES:-}" ] && [ -f "$icd" ]; then export VK_DRIVER_FILES=$icd; fi
done
egl=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
[ -f "$egl" ] && export __EGL_VENDOR_LIBRARY_FILENAMES=$egl
# Libraries the build links that the GPU image lacks travel in $BUILD/lib, or compressed as $BUILD/lib.tar.xz
# (docs/gpu-runs.md: the carry limit).
if [ -f "$BUILD/lib.tar.xz" ] && [ ! -d "$BUILD/lib" ]; then tar -xJf "$BUILD/lib.tar.xz" -C "$BUILD"; fi
export LD_LIBRARY_PATH="$PWD/$BUILD/lib:${LD_LIBRARY_PATH:-}"
# cuBLAS (the matmul ceiling) comes with PyTorch's CUDA wheels there.
if [ -z "${TRIREME_CUBLAS_DIR:-}" ]; then
  # nvidia.cublas (CUDA 12 wheels) or nvidia/cu13 (CUDA 13 wheels): wherever libcublas sits under site-packages
  TRIREME_CUBLAS_DIR=$(python3 -c 'import glob, os, site
for sp in site.getsitepackages():
    hits = sorted(glob.glob(os.path.join(sp, "nvidia", "**", "libcublas.so*"), recursive=True))
    if hits:
        print(os.path.dirname(hits[0]))
        break' 2>/dev/null || true)
  export TRIREME_CUBLAS_DIR
fi
export TRIREME_CACHE_DIR=${TRIREME_CACHE_DIR:-/tmp/trireme-cache}
T="$BUILD/cli/trireme"
status=0

# The device specs of the GPUs (or of every device with "all") among the listed ones: "gpus", "all" or a list.
gpu_devices() {
  case "$1" in
    gpus|all) "$T" devices 2>/dev/null | awk -v want="$1" \
                '$1 ~ /^(cuda|opencl|vulkan|cpu):[0-9]+$/ {spec=$1; getline; if (want=="all" || $0 ~ /GPU$/) print spec}' ;;
    *) echo "$1" | tr ',' '\n' ;;
  esac
}

for step in "${steps[@]}"; do
  case "$step" in
    devices)
      { date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv;
        echo "VK_DRIVER_FILES=${VK_DRIVER_FILES:-} TRIREME_CUBLAS_DIR=${TRIREME_CUBLAS_DIR:-}";
        "$T" devices; } 2>&1 | tee "$OUT/devices.txt" ;;
    conformance)
      # Under the Khronos validation layer where it was carried (README, "GPU runs"), as the tests run on
      # lavapipe: any validation message fails the call that caused it.
      vkval=${TRIREME_VK_VALIDATION:-0}
      layer=/usr/lib/x86_64-linux-gnu/libVkLayer_khronos_validation.so
      if [ -f "$layer" ] && ! ldd "$layer" 2>&1 | grep -q "not found"; then vkval=${TRIREME_VK_VALIDATION:-1}
      elif [ -f "$layer" ]; then ldd "$layer" 2>&1 | grep "not found" | sed 's/^/conformance: validation layer unusable: /' >>"$ERR"; fi
      echo "conformance: TRIREME_VK_VALIDATION=$vkval" | tee -a "$ERR"
      TRIREME_VK_VALIDATION=$vkval "$T" conformance --device "${CONF_DEVICES:-gpus}" --json "$OUT/conformance.json" 2>>"$ERR" | tee "$OUT/conformance.txt"
      [ "${PIPESTATUS[0]}" -eq 0 ] || status=1 ;;
    bench)
      tag=${BENCH_TAG:-}
      mkdir -p "$OUT/plots$tag"
      "$T" bench ${BENCH_OPS:-} --device "${BENCH_DEVICES:-gpus}" --sizes "$SIZES" ${BENCH_REPS:+--reps "$BENCH_REPS"} \
        --json "$OUT/bench$tag.json" --plot "$OUT/plots$tag" 2>>"$ERR" | tee "$OUT/bench$tag.txt"
      [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
      tar -C "$OUT" -cf "$OUT/plots$tag.tar" "plots$tag" && rm -rf "$OUT/plots$tag" ;;
    latency)
      # The tiny add of docs/ops.md (one element): µs per call, a run of calls then one synchronize, and every call synced.
      for d in $(gpu_devices "${BENCH_DEVICES:-gpus}"); do
        "$BUILD/tools/trr_tiny_add" --device "$d" --calls 1000 --reps 5 2>>"$ERR" | tee -a "$OUT/latency.txt"
        [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
      done ;;
    anchors)
      PYTHONUNBUFFERED=1 python3 bench/anchors.py "$OUT/anchors.json" 2>>"$ERR"
      [ $? -eq 0 ] || status=1
      # The anchors time bursts (do_bench) and the bench its own way, which a power-capped GPU runs at other
      # clocks: torch, Triton and this build under one method, on one stream, in one process, beside them
      # (the memory-bound benchmark cases under do_bench's structure and the bench's, the f16 and f16 + ReLU matmuls; ~40 s).
      if [ -f "$BUILD/libtrireme.so" ]; then
        PYTHONUNBUFFERED=1 PYTHONPATH="$PWD/python" TRIREME_LIBRARY="$PWD/$BUILD/libtrireme.so" \
          python3 tools/same_process.py --ops copy,add,gelu,softmax,row_sum,matmul --methods queued,synced 2>>"$ERR" | \
          tee "$OUT/same-process.txt"
        [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
      fi ;;
    tune)
      # The database goes to $OUT/tune.json, the default-vs-tuned table to $OUT/tune.txt.
      for d in $(gpu_devices "${TUNE_DEVICES:-gpus}"); do
        for op in ${TUNE_OPS:-matmul softmax}; do
          case "$op" in
            matmul)
              "$T" tune matmul --device "$d" --dtype "${TUNE_DTYPES:-f16->f16,f32}" --layout nn --db "$OUT/tune.json" \
                --shapes "${TUNE_SHAPES:-256x256x256,512x512x512,1024x1024x1024,2048x2048x2048,4096x4096x4096,8192x8192x8192}" \
                2>>"$ERR" | tee -a "$OUT/tune.txt"
              [ -n "${TUNE_SHAPES:-}" ] || "$T" tune matmul --device "$d" --dtype f32 --layout nn --db "$OUT/tune.json" \
                --shapes 8192x4096x6144 2>>"$ERR" | tee -a "$OUT/tune.txt" ;;
            softmax)
              "$T" tune softmax --device "$d" --dtype f32 --db "$OUT/tune.json" \
                --shapes 4096x256,4096x512,4096x1024,4096x2048,4096x4096,4096x8192,4096x12288 \
                2>>"$ERR" | tee -a "$OUT/tune.txt" ;;
          esac
          [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
        done
      done ;;
    tune-check)
      # Benchmark sizes the tuner did not time, with and without the database: in the bucket of a tuned shape (240 to
      # 7680, each 15/16 of one) and between buckets, where the nearest entry stands in (384 to 6144).
      devs=$(gpu_devices "${TUNE_DEVICES:-gpus}" | paste -sd, -)
      for db in tuned default; do
        path="$OUT/tune.json"; shipped=1; [ "$db" = default ] && path=/nonexistent/tune.json && shipped=0
        TRIREME_TUNE_DB=$path TRIREME_TUNE_SHIPPED=$shipped "$T" bench ${TUNECHECK_OPS:-matmul_f16 matmul_f32 softmax_f32} --device "$devs" --no-vendor \
          --sizes "${TUNECHECK_SIZES:-240,480,960,1920,3840,7680,384,768,1536,3072,6144}" ${BENCH_REPS:+--reps "$BENCH_REPS"} \
          --json "$OUT/tunecheck-$db.json" 2>>"$ERR" >/dev/null || status=1
      done
      "$T" bench --compare "$OUT/tunecheck-default.json" "$OUT/tunecheck-tuned.json" | tee "$OUT/tunecheck.txt" ;;
    vk-clocks)
      # Are Vulkan-only processes timed at low clocks? The same Vulkan cases alone, then with a CUDA device in the same process, with the SM clock sampled
      # every 100 ms into $OUT/clocks.csv.
      nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,pstate --format=csv -lms 100 >"$OUT/clocks.csv" 2>/dev/null &
      smi=$!
      for devs in vulkan:0 cuda:0,vulkan:0; do
        echo "== $(date -u +%T) bench --device $devs" | tee -a "$OUT/vk-clocks.txt"
        { "$T" bench add_f32 --device "$devs" --sizes 2^27 --no-vendor &&
          "$T" bench softmax_f32 matmul_f16 --device "$devs" --sizes 4096 --no-vendor; } 2>>"$ERR" | \
          tee -a "$OUT/vk-clocks.txt" || status=1
      done
      kill "$smi" 2>/dev/null ;;
    vk-coop)
      # The Vulkan f16, bf16 and FP8 matmuls on each cooperative-matrix variant the build has (README, "GPU runs"): the
      # kernel's VK_KHR_cooperative_matrix build (coop_khr, the default where built), its NV build (coop_nv) and
      # matmul_cm2.comp (cm2, VK_NV_cooperative_matrix2), forced with --config, each through the conformance
      # suite and then timed. The validation layer we carry (1.3.239) predates both newer extensions, so under
      # it coop_khr and cm2 are rejected (unsupported): those run the suite without it.
      for mode in ${VK_COOP_MODES:-coop_khr coop_nv cm2}; do
        cfg="matmul:variant=$mode"
        vkval=0
        [ "$mode" = coop_nv ] && vkval=${TRIREME_VK_VALIDATION:-1}
        echo "== $(date -u +%T) $mode (--config $cfg, TRIREME_VK_VALIDATION=$vkval)" | tee -a "$OUT/vk-coop.txt"
        # A kernel never run before may hang the queue: each part has a time limit.
        TRIREME_VK_VALIDATION=$vkval timeout 150 "$T" conformance --device vulkan:0 --config "$cfg" 2>>"$ERR" | \
          tail -4 | tee -a "$OUT/vk-coop.txt"
        TRIREME_VK_VALIDATION=0 timeout 150 "$T" bench matmul_f16 matmul_f16_relu matmul_bf16 matmul_fp8 --device vulkan:0 --config "$cfg" \
          --sizes 1024,2048,4096,8192 --reps 20 --no-vendor 2>>"$ERR" | tee -a "$OUT/vk-coop.txt"
      done
      # cuBLAS (cuBLASLt for FP8) in the same run, so the Vulkan figures compare with it.
      echo "== $(date -u +%T) cuBLAS (the vendor column of cuda:0)" | tee -a "$OUT/vk-coop.txt"
      timeout 150 "$T" bench matmul_f16 matmul_bf16 matmul_fp8 --device cuda:0 --sizes 4096,8192 --reps 20 2>>"$ERR" | \
        tee -a "$OUT/vk-coop.txt" ;;
    row-variants)
      # The row-wise ops' kernel families side by side on every GPU device, each forced with --config, for the
      # heuristic's choice between them (Vulkan: softmax and row_sum simt vs subgroup; CUDA: softmax): first each
      # family through the op's conformance cases, then timed at the benchmark's row sizes. ROW_THREADS adds thread counts.
      for dev in $(gpu_devices "${BENCH_DEVICES:-gpus}"); do
        case "$dev" in cuda:*|vulkan:*) ;; *) continue ;; esac
        for op in softmax row_sum; do
          [ "$op" = row_sum ] && [ "${dev%%:*}" = cuda ] && continue # one family there
          for v in simt subgroup; do
            for th in "" ${ROW_THREADS:-}; do
              cfg="$op:variant=$v${th:+,threads=$th}"
              echo "== $(date -u +%T) $dev --config $cfg" | tee -a "$OUT/row-variants.txt"
              TRIREME_VK_VALIDATION=0 timeout 120 "$T" conformance --device "$dev" --ops "$op" --config "$cfg" \
                2>>"$ERR" | grep -E "passed, [0-9]+ failed|FAIL" | tee -a "$OUT/row-variants.txt"
              TRIREME_VK_VALIDATION=0 timeout 120 "$T" bench "${op}_f32" --device "$dev" --config "$cfg" --reps 20 \
                2>>"$ERR" | tee -a "$OUT/row-variants.txt"
            done
          done
        done
      done ;;
    old-new)
      # Before/after: the README's bench cases on the build before a change (TRIREME_GPU_BUILD_OLD, carried
      # beside this one) and on this build, alternated over OLDNEW_ROUNDS rounds in one run so clock and
      # thermal drift fall on both; then each round compared (ratio new / old). The reports go into one tar.
      old=${TRIREME_GPU_BUILD_OLD:?old-new needs TRIREME_GPU_BUILD_OLD}
      devs=$(gpu_devices "${BENCH_DEVICES:-gpus}" | paste -sd, -)
      mkdir -p "$OUT/oldnew"
      for round in $(seq 1 "${OLDNEW_ROUNDS:-2}"); do
        for which in old new; do
          bin=$T; lib=$BUILD/lib
          [ "$which" = old ] && bin=$old/cli/trireme && lib=$old/lib
          LD_LIBRARY_PATH="$PWD/$lib:${LD_LIBRARY_PATH:-}" "$bin" bench ${OLDNEW_BENCHES:-matmul_f16 matmul_f32 softmax_f32 add_f32 gelu_f32} \
            --device "$devs" --sizes quick --no-vendor --json "$OUT/oldnew/$which-$round.json" 2>>"$ERR" >/dev/null || status=1
        done
        echo "== round $round: B = this build, A = the build before (TRIREME_GPU_BUILD_OLD)" | tee -a "$OUT/oldnew.txt"
        "$T" bench --compare "$OUT/oldnew/old-$round.json" "$OUT/oldnew/new-$round.json" | tee -a "$OUT/oldnew.txt"
      done
      tar -C "$OUT" -cf "$OUT/oldnew.tar" oldnew && rm -rf "$OUT/oldnew" ;;
    python)
      # The Python package beside PyTorch on CUDA (issue 46): the DLPack and stream tests, the torch custom ops
      # with opcheck, the seed-style script, the whole suite on cuda:0, and the per-call figures beside torch's.
      # From the carried build (the package from source, its library from $BUILD); about a minute.
      py_env=(env PYTHONUNBUFFERED=1 PYTHONPATH="$PWD/python" TRIREME_LIBRARY="$PWD/$BUILD/libtrireme.so"
              TRIREME_CLI="$PWD/$T")
      "${py_env[@]}" TRIREME_TEST_DEVICES=cuda:0 python3 -m pytest -q -rs -p no:cacheprovider python/tests \
        2>&1 | tee "$OUT/python-tests.txt"
      [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
      "${py_env[@]}" python3 python/examples/torch_seed_check.py 2>&1 | tee "$OUT/python-seed.txt"
      [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
      "${py_env[@]}" python3 python/bench/per_call.py --device cuda:0 --json "$OUT/per-call.json" 2>>"$ERR" | \
        tee "$OUT/per-call.txt"
      [ "${PIPESTATUS[0]}" -eq 0 ] || status=1 ;;
    f16-bound)
      # Does cuBLAS meet the f16 matmul bound at K = 8192 (tools/f16_bound.py)? About 20 s.
      PYTHONUNBUFFERED=1 python3 tools/f16_bound.py "$OUT/f16-bound.json" 2>>"$ERR" | tee "$OUT/f16-bound.txt"
      [ "${PIPESTATUS[0]}" -eq 0 ] || status=1 ;;
    f16-tail)
      # The tail of the f16 matmul's largest relative error near K = 4096 over 30 seeds: cuBLAS and trireme's GPU
      # devices on the same inputs (tools/f16_bound.py --tail).
      PYTHONUNBUFFERED=1 TRIREME_LIBRARY="$BUILD/libtrireme.so" python3 tools/f16_bound.py --tail "$OUT/f16-tail.json" \
        --devices "${F16_TAIL_DEVICES:-cuda:0,vulkan:0,opencl:1}" --whole 2>>"$ERR" | tee "$OUT/f16-tail.txt"
      [ "${PIPESTATUS[0]}" -eq 0 ] || status=1 ;;
    custom-op)
      # User ops (docs/custom-ops.md): examples/custom_op's swiglu and silu_user from their library, checked on
      # every GPU device (CUDA, Vulkan, OpenCL: their own kernels), tuned over their tile candidates, and
      # benchmarked beside the built-in silu (silu_user is its arithmetic as a user kernel) and add in one run,
      # with the database just written.
      lib="$BUILD/examples/custom_op/libswiglu.so"
      db="$OUT/custom-op-tune.json"
      "$T" conformance --ops-lib "$lib" --ops swiglu,silu_user --device "${CONF_DEVICES:-gpus}" \
        --json "$OUT/custom-op-conformance.json" 2>>"$ERR" | tee "$OUT/custom-op.txt"
      [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
      for d in $(gpu_devices "${TUNE_DEVICES:-gpus}"); do
        TRIREME_TUNE_DB="$db" "$T" tune --ops-lib "$lib" swiglu silu_user --device "$d" 2>>"$ERR" | tee -a "$OUT/custom-op.txt"
        [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
      done
      TRIREME_TUNE_DB="$db" "$T" bench --ops-lib "$lib" swiglu silu_user silu add --device "${BENCH_DEVICES:-gpus}" \
        --sizes "$SIZES" --json "$OUT/custom-op-bench.json" 2>>"$ERR" | tee -a "$OUT/custom-op.txt"
      [ "${PIPESTATUS[0]}" -eq 0 ] || status=1 ;;
    *) echo "gpu_run.sh: unknown step '$step' (devices conformance bench latency anchors tune tune-check vk-clocks vk-coop f16-bound f16-tail old-new row-variants python custom-op)" >&2; exit 2 ;;
  esac
done
# The machine-readable outputs (JSON reports, samples, plots) go into one reports.tar beside the text logs, so a
# run of several steps stays within the device tool's 8 returned files.
packed=()
for f in "$OUT"/*.json "$OUT"/*.csv "$OUT"/*.tar; do
  [ -e "$f" ] && [ "$(basename "$f")" != reports.tar ] && packed+=("$(basename "$f")")
done
if [ ${#packed[@]} -gt 0 ]; then
  if tar -C "$OUT" -rf "$OUT/reports.tar" "${packed[@]}"; then (cd "$OUT" && rm -f "${packed[@]}"); else status=1; fi
fi
exit $status
