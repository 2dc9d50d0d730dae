#!/usr/bin/env bash
# The GPU check's wrapper, run on the GPU machine (Python 3.12, no network) from the repository root:
#
#     bash benchmarks/gpu_check.sh OUTDIR [args for benchmarks/gpu_check.py...]
#
# It sets up what gpu_carry/ (filled here by `python tools/prepare_gpu_carry.py`, carried as an ignored path)
# brings: the carried wheels installed into gpu_carry/site (offline; only those not importable already), the
# Vulkan loader unpacked from gpu_carry/debs into gpu_carry/vulkan and put on LD_LIBRARY_PATH, the NVIDIA Vulkan
# driver file in VK_DRIVER_FILES where there is one; it builds the C modules in place (120 s at most; ndflow runs
# without them), then runs `python3 benchmarks/gpu_check.py OUTDIR "$@"`. Without gpu_carry/ it warns and runs
# the check as it is (its dry run needs none of it). What it set up is printed and kept in OUTDIR/gpu_setup.log.
set -euo pipefail

if [ $# -lt 1 ]; then
  echo "usage: bash benchmarks/gpu_check.sh OUTDIR [args for benchmarks/gpu_check.py...]" >&2
  exit 2
fi
OUTDIR=$1
shift
cd "$(dirname "$0")/.."
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
CARRY=$PWD/gpu_carry
PY=${PYTHON:-python3}
LOG=$OUTDIR/gpu_setup.log
: > "$LOG"
note() { echo "gpu_check.sh: $*" | tee -a "$LOG"; }

note "python: $($PY -c 'import sys; print(sys.version.split()[0], sys.executable)')"
if [ ! -d "$CARRY" ]; then
  note "WARNING: $CARRY not found (run python tools/prepare_gpu_carry.py here and carry gpu_carry):" \
    "no wgpu wheels, Vulkan loader or carried models; the check runs with what this machine has"
else
  # 1. wheels: offline, no dependencies (the carried set is the closure), only those not importable already.
  export PYTHONPATH="$CARRY/site${PYTHONPATH:+:$PYTHONPATH}"
  wanted=()
  shopt -s nullglob
  for whl in "$CARRY"/wheels/*.whl; do
    name=$(basename "$whl")
    module=${name%%-*}
    if $PY -c "import $module" > /dev/null 2>&1; then
      note "wheel $name: skipped ($module importable already)"
    else
      wanted+=("$whl")
    fi
  done
  if [ ${#wanted[@]} -gt 0 ] && ! $PY -m pip --version > /dev/null 2>&1; then
    # no pip: a wheel is a zip of its site-packages files (no scripts needed here)
    mkdir -p "$CARRY/site"
    for whl in "${wanted[@]}"; do
      if $PY -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$whl" "$CARRY/site"; then
        note "wheel $(basename "$whl"): unzipped into gpu_carry/site (no pip)"
      else
        note "WARNING: unzipping $(basename "$whl") failed"
      fi
    done
  elif [ ${#wanted[@]} -gt 0 ]; then
    if PIP_ROOT_USER_ACTION=ignore $PY -m pip install -q --no-index --no-deps --upgrade --disable-pip-version-check \
        --target "$CARRY/site" "${wanted[@]}" >> "$LOG" 2>&1; then
      for whl in "${wanted[@]}"; do note "wheel $(basename "$whl"): installed into gpu_carry/site"; done
    else
      note "WARNING: pip install of the carried wheels failed (see $LOG); webgpu may be unavailable"
    fi
  fi
  # 2. the Vulkan loader: dpkg -x each deb (ar + tar where dpkg is missing), loader's folder first on the path.
  mkdir -p "$CARRY/vulkan"
  for deb in "$CARRY"/debs/*.deb; do
    if command -v dpkg > /dev/null; then
      dpkg -x "$deb" "$CARRY/vulkan" || note "WARNING: dpkg -x $(basename "$deb") failed"
    elif command -v ar > /dev/null; then
      (tmp=$(mktemp -d) && cd "$tmp" && ar x "$deb" && tar -xf data.tar.* -C "$CARRY/vulkan"; rm -rf "$tmp") ||
        note "WARNING: unpacking $(basename "$deb") with ar failed"
    else
      note "WARNING: neither dpkg nor ar found: $(basename "$deb") not unpacked"
    fi
  done
  loader=$(find "$CARRY/vulkan" -name 'libvulkan.so.1' 2> /dev/null | head -n 1 || true)
  if [ -n "$loader" ]; then
    export LD_LIBRARY_PATH="$(dirname "$loader")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    note "Vulkan loader: $(dirname "$loader") first on LD_LIBRARY_PATH"
  else
    note "Vulkan loader: none carried; the system's, if any"
  fi
  shopt -u nullglob
fi

# 3. the NVIDIA Vulkan driver file (unless the caller chose one).
if [ -z "${VK_DRIVER_FILES:-}${VK_ICD_FILENAMES:-}" ]; then
  for icd in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd.json \
      /etc/vulkan/icd.d/nvidia_icd.json; do
    if [ -f "$icd" ]; then
      export VK_DRIVER_FILES=$icd
      break
    fi
  done
fi
note "VK_DRIVER_FILES=${VK_DRIVER_FILES:-<unset>}"

# 4. the C modules, in place (optional: ndflow runs its Python dispatch without them).
if timeout 120 $PY setup.py -q build_ext --inplace >> "$LOG" 2>&1; then
  note "C modules: built in place"
else
  note "NOTE: building the C modules failed or took over 120 s (see $LOG); ndflow runs without them"
fi

note "PYTHONPATH=${PYTHONPATH:-} LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
note "running: $PY benchmarks/gpu_check.py $OUTDIR $*"
exec $PY benchmarks/gpu_check.py "$OUTDIR" "$@"
