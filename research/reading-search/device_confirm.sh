#!/usr/bin/env bash
# The reading search's confirmation runs (research/reading-search/README.md) on a many-core machine: one `minitepo compare`
# process per (task, entry), one torch thread each, on the CPU, all from the warm starts in
# BASE/confirm-TASK/warmstart (BASE defaults to runs/search); then one more compare per task that finds every run finished and writes the
# combined summary and figures. What it produces is packed into $PACK (no checkpoints), every minute and at the end.
#
#   bash research/reading-search/device_confirm.sh "ENTRY,ENTRY,..." PACK.tar.gz
#
# The same runs on a 2-core machine: the two compare commands of research/reading-search/README.md (sequential, --resume).
set -u
entries="$1"
pack="$2"
base="${BASE:-runs/search}"            # smoke test: BASE=/tmp/x ITERATIONS=1 SEEDS=20-20
iterations="${ITERATIONS:-100}"
seeds="${SEEDS:-20-24}"
export OMP_NUM_THREADS=1 PYTHONUNBUFFERED=1
declare -A target=([countdown]=0.3 [add]=0.6) level=([countdown]=4 [add]=3)

pack_now() {
    tar czf "$pack.tmp" --exclude='checkpoint.pt' --exclude='*.pt.tmp' $base/confirm-countdown \
        $base/confirm-add 2>/dev/null && mv "$pack.tmp" "$pack"
}
(while true; do sleep 30; pack_now; done) &
packer=$!

IFS=, read -ra list <<< "$entries"
pids=()
for task in countdown add; do
    for entry in "${list[@]}"; do
        log="$base/confirm-$task/$(echo "$entry" | tr ':=+' '-__').log"
        python3 -m minitepo --threads 1 compare --task "$task" --levels "${level[$task]}" --device cpu \
            --init "$base/confirm-$task/warmstart/checkpoint.pt" --algos "$entry" --seeds "$seeds" \
            --iterations "$iterations" --target-accuracy "${target[$task]}" --out "$base/confirm-$task" --resume \
            > "$log" 2>&1 &
        pids+=($!)
    done
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
for task in countdown add; do
    python3 -m minitepo --threads 1 compare --task "$task" --levels "${level[$task]}" --device cpu \
        --init "$base/confirm-$task/warmstart/checkpoint.pt" --algos "$entries" --seeds "$seeds" \
        --iterations "$iterations" --target-accuracy "${target[$task]}" --out "$base/confirm-$task" --resume \
        > "$base/confirm-$task/combined.log" 2>&1 || status=1
done
kill "$packer" 2>/dev/null
pack_now
exit $status
