#!/usr/bin/env bash
# The whole test suite, as CI runs it:
#   1. warnings-as-errors build + ctest
#   2. AddressSanitizer + UBSan build + ctest
#   3. a build without jansson, utf8proc, BLAS, MPI and CUDA + ctest (their tests skip)
#   4. short bounded libFuzzer runs of the parsers (clang)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
JOBS=$(nproc)
CUDA=${GPT2C_CUDA:-AUTO}
# each stage's wall time, so a slow CI run says where its minutes went
stage_start=
stage() {
  [ -n "$stage_start" ] && echo "   (stage took $((SECONDS - stage_start)) s; $SECONDS s in all)"
  stage_start=$SECONDS
  echo "== $1 =="
}

stage "build (-Werror)"
cmake -S . -B build-ci -DCMAKE_BUILD_TYPE=Release -DGPT2C_WERROR=ON -DGPT2C_CUDA="$CUDA" >/dev/null
cmake --build build-ci -j "$JOBS"
(cd build-ci && ctest --output-on-failure -j "$JOBS")

stage "build (AddressSanitizer + UBSan)"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DGPT2C_WERROR=ON -DGPT2C_SANITIZE=ON -DGPT2C_CUDA=OFF >/dev/null
cmake --build build-asan -j "$JOBS"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j "$JOBS")

stage "build without optional dependencies"
cmake -S . -B build-nodeps -DGPT2C_WERROR=ON -DGPT2C_CUDA=OFF -DGPT2C_MPI=OFF -DGPT2C_BLAS=OFF -DCMAKE_DISABLE_FIND_PACKAGE_PkgConfig=ON >/dev/null
cmake --build build-nodeps -j "$JOBS"
(cd build-nodeps && ctest --output-on-failure -j "$JOBS")

if [ -f fuzz/run.sh ]; then
  stage "fuzz (bounded)"
  bash fuzz/run.sh "${GPT2C_FUZZ_SECONDS:-15}"
fi
stage "done"
echo "all test stages passed"
