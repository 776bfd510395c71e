#!/usr/bin/env bash
# The blas backend names the OpenBLAS core it runs and never runs a generic
# one silently: with OPENBLAS_CORETYPE unset the core is chosen from the ISA
# (AVX-512F: SkylakeX/Cooperlake class, AVX2: Haswell/Zen); a generic one
# preset in the environment is replaced (and said); kept on request, it is
# flagged with a WARNING.  (`gpt2c --version` loads the backend to say so.)
G="$1"
fail() { echo "FAIL: $*"; exit 1; }
V=$(env -u OPENBLAS_CORETYPE "$G" --version) || fail "--version"
case "$V" in *-blas*) echo "SKIP: built without the blas backend"; exit 77 ;; esac
line=$(grep "^  BLAS" <<< "$V")
echo "$line"
case "$line" in *unavailable*) echo "SKIP: no cblas library loads here"; exit 77 ;; esac
case "$line" in *"not OpenBLAS"*) echo "SKIP: the cblas library is not OpenBLAS"; exit 77 ;; esac
core_of() { sed -n 's/.*, core \([A-Za-z0-9]*\)).*/\1/p' <<< "$1"; }
isa=$(sed -n 's/.*runs \([a-z0-9]*\)$/\1/p' <<< "$(grep "SIMD paths" <<< "$V")")
c=$(core_of "$line")
[ -n "$c" ] || fail "no core named: $line"
case "$isa" in
  avx512) [[ $c =~ ^(SkylakeX|Cooperlake|SapphireRapids)$ ]] || fail "AVX-512 CPU runs core $c" ;;
  avx2) [[ $c =~ ^(Haswell|Zen|SkylakeX|Cooperlake)$ ]] || fail "AVX2 CPU runs core $c" ;;
  *) echo "SKIP: no AVX2 here (ISA $isa): OpenBLAS's own choice stands"; exit 77 ;;
esac
grep -q "chosen from this CPU's ISA" <<< "$line" || fail "the choice is not explained: $line"
# a generic core preset in the environment is replaced, and that is said
line=$(OPENBLAS_CORETYPE=Prescott "$G" --version | grep "^  BLAS")
echo "$line"
c=$(core_of "$line")
[ "$c" != Prescott ] && [ -n "$c" ] || fail "preset Prescott kept: $line"
grep -q "OPENBLAS_CORETYPE=Prescott in the environment" <<< "$line" || fail "replacement not said: $line"
# kept on request: flagged, never silent
line=$(GPT2C_KEEP_OPENBLAS_CORETYPE=1 OPENBLAS_CORETYPE=Prescott "$G" --version | grep "^  BLAS")
echo "$line"
grep -q "WARNING: OpenBLAS runs its generic Prescott core" <<< "$line" || fail "generic core not flagged: $line"
echo OK
