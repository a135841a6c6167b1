#!/bin/bash
# rnn_scan and lstm_scan of ../shared/perf at other trip counts (T = 100, 400, 1600), in the
# layout of ../shared/perf, to show whether a loop's time per iteration is independent of its
# trip count (scan_grad_scaling.py does the same for scan_grad). Only the trip count changes:
# the stacked inputs' and outputs' leading dimension and the loop bound.
#
#   benches/loop_scaling.sh /tmp/scal [PERF_DIR, default ../shared/perf]
#   target/venv/bin/python3 ../shared/perf/xla_reference.py --save-outputs /tmp/scal.out /tmp/scal/*
#   target/release/hlojit bench --root /tmp/scal --check-dir /tmp/scal.out
set -euo pipefail
out=$1
perf=${2:-$(dirname "$0")/../../shared/perf}
for T in 100 400 1600; do
  d=$out/rnn_T$T; mkdir -p "$d"
  for f in module.hlo module.stablehlo.mlir; do
    sed -e "s/1000x1x/${T}x1x/g" -e "s/\[1000,/[$T,/g" -e "s/constant(1000)/constant($T)/g" -e "s/dense<1000>/dense<$T>/g" \
      "$perf/rnn_scan_1000x64_b1/$f" > "$d/$f"
  done
  python3 -c "import json,sys; p=json.load(open(sys.argv[1])); p['name']='rnn_T$T'; p['inputs'][0]['shape'][0]=$T; json.dump(p, open(sys.argv[2],'w'))" \
    "$perf/rnn_scan_1000x64_b1/perf.json" "$d/perf.json"
  d=$out/lstm_T$T; mkdir -p "$d"
  for f in module.hlo module.stablehlo.mlir; do
    sed -e "s/128x16x256/${T}x16x256/g" -e "s/\[128,16,256\]/[$T,16,256]/g" -e "s/constant(128)/constant($T)/g" -e "s/dense<128>/dense<$T>/g" \
      "$perf/lstm_scan_128x256_b16/$f" > "$d/$f"
  done
  python3 -c "import json,sys; p=json.load(open(sys.argv[1])); p['name']='lstm_T$T'; p['inputs'][0]['shape'][0]=$T; json.dump(p, open(sys.argv[2],'w'))" \
    "$perf/lstm_scan_128x256_b16/perf.json" "$d/perf.json"
done
