# Helpers of the scripts run on a lent machine (bench/gpu_check.sh,
# bench/cpu_check.sh, bench/bf16_engine_check.sh); source it.

# unpack_debs DIR: the Debian packages in DIR that the machine lacks, unpacked
# into / (never over installed ones), then ldconfig.  No DIR: nothing.
unpack_debs() {
  [ -n "${1:-}" ] || return 0
  local f
  for f in "$1"/*.deb; do
    dpkg -s "$(dpkg-deb -f "$f" Package)" >/dev/null 2>&1 || dpkg -x "$f" /
  done
  ldconfig
}

# blas_cmake_flags DEFAULT: sets the array BLAS_FLAGS for CMake: Debian's
# OpenBLAS named outright where it is unpacked without its alternatives links
# (CMake's search does not find it there), else -DGPT2C_BLAS=DEFAULT.
blas_cmake_flags() {
  local ob=/usr/lib/x86_64-linux-gnu/openblas-pthread inc=/usr/include/x86_64-linux-gnu/openblas-pthread
  BLAS_FLAGS=(-DGPT2C_BLAS="$1")
  if [ -f $ob/libopenblas.so ] && [ -f $inc/cblas.h ]; then
    BLAS_FLAGS=(-DGPT2C_BLAS=ON -DCBLAS_LIBRARY=$ob/libopenblas.so -DCBLAS_INCLUDE_DIR=$inc)
  fi
}

# two_cores: "a,b", one logical CPU from each of the first two physical cores
# (no SMT siblings; 0,1 when lscpu cannot tell)
two_cores() {
  local c
  c=$(lscpu -p=CPU,CORE,SOCKET | grep -v '^#' | awk -F, '!seen[$2 "," $3]++ { print $1 }' | head -2 | paste -sd,)
  echo "${c:-0,1}"
}
