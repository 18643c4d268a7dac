#!/usr/bin/env bash
# The exact IREOS index on a GPU: the block solver on the device against the host (side by side), then the exact
# Table 6 cells still missing (docs/ireos.md, *Not done here*), resumed from and adding to the checkpoints.
#
#   bash benchmarks/ireos_gpu.sh prepare   # here: copy what the device machine needs into .gpu_data/ (ignored)
#   bash benchmarks/ireos_gpu.sh run [S]   # there, from the repo root, .gpu_data carried: S seconds of cells
#
# `prepare` copies the four large variants of ../shared/datasets/ireos_authors, their Campos ARFFs (labels) and the
# checkpoints of benchmarks/checkpoints (committed); `run` writes to $OUT (or /tmp/ireos-gpu): card.txt,
# side_by_side.txt, ireos_authors.jsonl (the rows as benchmarks/ireos_authors.jsonl plus the new cells, each row
# recording the card), cells.log and checkpoints.tgz (every finished chunk, to unpack into benchmarks/checkpoints
# here and commit). A cell stopped by the time limit writes no row; its chunks are in checkpoints.tgz.
set -euo pipefail
cd "$(dirname "$0")/.."
VARIANTS="Waveform_withoutdupl_norm_v05 Wilt_withoutdupl_norm_05 Annthyroid_withoutdupl_norm_05_v01 PenDigits_withoutdupl_norm_v09"
CHECKPOINTS=${CHECKPOINTS:-benchmarks/checkpoints}

case "${1:-}" in
prepare)
  shared=${ODEVAL_SHARED_DATASETS:-../shared/datasets}
  rm -rf .gpu_data && mkdir -p .gpu_data/datasets/ireos_authors .gpu_data/checkpoints
  for v in $VARIANTS; do
    base=${v%%_*}
    cp -r "$shared/ireos_authors/$v" .gpu_data/datasets/ireos_authors/
    mkdir -p ".gpu_data/datasets/dami/$base" && cp "$shared/dami/$base/$v.arff" ".gpu_data/datasets/dami/$base/"
  done
  if [ -d "$CHECKPOINTS" ]; then cp "$CHECKPOINTS"/*.jsonl .gpu_data/checkpoints/ 2>/dev/null || true; fi
  du -sh .gpu_data
  ;;
run)
  seconds=${2:-420}
  out=${OUT:-/tmp/ireos-gpu}
  mkdir -p "$out"
  export ODEVAL_SHARED_DATASETS=$PWD/.gpu_data/datasets PYTHONPATH=src PYTHONUNBUFFERED=1
  # one host thread per BLAS call: the host's share is the Newton steps of many chunks in parallel threads
  export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 NUMBA_NUM_THREADS=1
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$out/card.txt"
  python3 -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name())" | tee -a "$out/card.txt"
  python3 benchmarks/ireos_exact_block.py Waveform_withoutdupl_norm_v05 --gamma-max 0.8734 --objects 128 \
    --host 8 --dense 0 --device cuda 2>&1 | tee "$out/side_by_side.txt"
  cp benchmarks/ireos_authors.jsonl "$out/ireos_authors.jsonl"
  timeout "$seconds" python3 benchmarks/ireos_authors.py --out "$out/ireos_authors.jsonl" \
    --only Waveform,Wilt,Annthyroid,PenDigits --exact-max-n 10000 --workers "${WORKERS:-12}" --device cuda \
    --checkpoints .gpu_data/checkpoints 2>&1 | tee "$out/cells.log" || echo "stopped after $seconds s" | tee -a "$out/cells.log"
  tar czf "$out/checkpoints.tgz" -C .gpu_data/checkpoints .
  ;;
*)
  echo "usage: bash benchmarks/ireos_gpu.sh prepare | run [SECONDS]" >&2
  exit 2
  ;;
esac
