# Builds a bench driver (a C file that times library ops) against a build of
# libgpt2c.a; sourced by the bench scripts that have one.

# bench_driver OUT SRC TREE LIBDIR [ARGS...]: SRC compiled with TREE's headers
# (include/ and src/) and linked to LIBDIR/libgpt2c.a and the optional
# libraries the library may use (those pkg-config finds), into OUT; ARGS
# (more flags, -D..., -lopenblas) go after the library.
bench_driver() {
  local out=$1 src=$2 tree=$3 lib=$4; shift 4
  local pkgs; pkgs="$(pkg-config --libs jansson libmicrohttpd libutf8proc 2>/dev/null || true)"
  cc -O2 -std=c11 -fopenmp -I"$tree/include" -I"$tree/src" "$src" "$lib/libgpt2c.a" $pkgs "$@" -lm -o "$out"
}
