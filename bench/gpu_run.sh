#!/usr/bin/env bash
# The GPU part in one go, from a build made on the development machine and carried to the GPU machine:
# the device list, the conformance suite on every device (CUDA, OpenCL and Vulkan on the GPU), then the
# benchmarks of every GPU backend and the PyTorch/Triton/cuBLAS anchors in the same run.
#
#   bench/gpu_run.sh [STEP...]      steps: devices conformance bench anchors tune (default: the first four)
#
# Environment: TRIREME_GPU_BUILD (default build-gpu, made by `make gpu-build`), OUT (where logs go; the device
# tool sets it), CONF_DEVICES and BENCH_DEVICES (default gpus: every GPU of every backend; "all" adds
# PoCL and the CPU), BENCH_SIZES (default quick), BENCH_OPS (default all), TUNE_DEVICES (default gpus).
# At most 8 files come back from $OUT, so every step's progress (stderr) goes to one log, $OUT/stderr.log.
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
# Libraries the build links that the GPU image lacks travel in $BUILD/lib.
export LD_LIBRARY_PATH="$PWD/$BUILD/lib:${LD_LIBRARY_PATH:-}"
# cuBLAS (the matmul ceiling) comes with PyTorch's CUDA wheels there.
if [ -z "${TRIREME_CUBLAS_DIR:-}" ]; then
  TRIREME_CUBLAS_DIR=$(python3 -c 'import os, nvidia.cublas as m; print(os.path.join(list(m.__path__)[0], "lib"))' 2>/dev/null || true)
  export TRIREME_CUBLAS_DIR
fi
export TRIREME_CACHE_DIR=${TRIREME_CACHE_DIR:-/tmp/trireme-cache}
T="$BUILD/cli/trireme"
status=0

for step in "${steps[@]}"; do
  case "$step" in
    devices)
      { date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv;
        echo "VK_DRIVER_FILES=${VK_DRIVER_FILES:-} TRIREME_CUBLAS_DIR=${TRIREME_CUBLAS_DIR:-}";
        "$T" devices; } 2>&1 | tee "$OUT/devices.txt" ;;
    conformance)
      "$T" conformance --device "${CONF_DEVICES:-gpus}" --json "$OUT/conformance.json" 2>>"$ERR" | tee "$OUT/conformance.txt"
      [ "${PIPESTATUS[0]}" -eq 0 ] || status=1 ;;
    bench)
      mkdir -p "$OUT/plots"
      "$T" bench ${BENCH_OPS:-} --device "${BENCH_DEVICES:-gpus}" --sizes "$SIZES" --json "$OUT/bench.json" --plot "$OUT/plots" \
        2>>"$ERR" | tee "$OUT/bench.txt"
      [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
      tar -C "$OUT" -cf "$OUT/plots.tar" plots && rm -rf "$OUT/plots" ;;
    anchors)
      PYTHONUNBUFFERED=1 python3 bench/anchors.py "$OUT/anchors.json" 2>>"$ERR"
      [ $? -eq 0 ] || status=1 ;;
    tune)
      # SPEC's matmul and softmax sizes; the database goes to $OUT/tune.json, the default-vs-tuned table to
      # $OUT/tune.txt.
      for d in $(TRIREME_CACHE_DIR=$TRIREME_CACHE_DIR "$T" devices 2>/dev/null | awk -v want="${TUNE_DEVICES:-gpus}" \
                 '$1 ~ /^(cuda|opencl|vulkan|cpu):[0-9]+$/ {spec=$1; getline; if (want=="all" || $0 ~ /GPU$/) print spec}'); do
        "$T" tune matmul --device "$d" --shapes 1024x1024x1024,4096x4096x4096 --dtype "f16->f16,f32" --layout nn \
          --db "$OUT/tune.json" 2>>"$ERR" | tee -a "$OUT/tune.txt"
        "$T" tune softmax --device "$d" --shapes 4096x1024,4096x4096,4096x12288 --dtype f32 \
          --db "$OUT/tune.json" 2>>"$ERR" | tee -a "$OUT/tune.txt"
      done ;;
    *) echo "gpu_run.sh: unknown step '$step' (devices conformance bench anchors tune)" >&2; exit 2 ;;
  esac
done
exit $status
