#!/usr/bin/env bash
# Run oneDNN's benchdnn graph harness lists with `onednn-graph run --batch`, unchanged,
# and print one markdown row per list: its closing counts, exit status and time.
# Usage: scripts/harness_lists.sh INPUTS [MODE]
#   INPUTS holds one folder per oneDNN version in benchdnn's layout (v3.2/op/...,
#   v3.13/pattern/...), e.g. ../shared/benchdnn-graph-inputs; MODE defaults to
#   correctness. Each list's full output goes to $OUT (default: a temporary folder).
set -uo pipefail
inputs="$(cd "${1:?usage: $0 INPUTS [MODE]}" && pwd)"
mode="${2:-correctness}"
out="${OUT:-$(mktemp -d)}"
mkdir -p "$out"
lists="op/harness_f32_all op/harness_bf16_all op/harness_f16_all pattern/harness_f32_all
       pattern/harness_bf16_all pattern/harness_f16_all pattern/harness_int8_all"
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'), oneDNN ISA $(python -c 'import onednn_graph as og; print(og.system.cpu_isa())')"
echo
echo "| oneDNN | list | exit | seconds | benchdnn's counts |"
echo "| --- | --- | --- | --- | --- |"
for version in $(ls "$inputs" | sort -V); do
  [ -d "$inputs/$version" ] || continue
  for list in $lists; do
    [ -f "$inputs/$version/$list" ] || continue
    log="$out/${version}_${list//\//_}.txt"
    start=$(date +%s.%N)
    (cd "$inputs/$version" && onednn-graph run --batch "$list" --mode "$mode" >"$log" 2>&1)
    status=$?
    seconds=$(python -c "print(f'{$(date +%s.%N) - $start:.1f}')")
    echo "| $version | $list | $status | $seconds | $(tail -n 1 "$log") |"
  done
done
echo
echo "Full output: $out"
