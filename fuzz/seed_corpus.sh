#!/bin/sh
# Seeds fuzz/corpus/<target>/ with the conformance modules and the file tests (run from the
# repository root). libFuzzer grows the corpus from there; it is not committed.
set -e
for t in parse verify compile; do
    mkdir -p fuzz/corpus/$t
    for f in tests/conformance/cases/*/module.hlo tests/filetests/*/*.hlo; do
        # compile only takes small modules (see fuzz_targets/compile.rs)
        if [ $t = compile ] && [ "$(wc -c < "$f")" -gt 4096 ]; then continue; fi
        cp "$f" "fuzz/corpus/$t/$(echo "$f" | tr / _)"
    done
done
