#!/bin/sh
# SPDX-License-Identifier: ISC
#
# check_hardening.sh: the programs are built with the hardening flags
# configure checked (configure.ac, HARDEN_CFLAGS and HARDEN_LDFLAGS), run
# by make check from the build directory.  For each installed program,
# with each flag configure kept:
#
#   pie        -pie: an ELF of type DYN with an interpreter
#   relro      -Wl,-z,relro: a GNU_RELRO segment
#   now        -Wl,-z,now: BIND_NOW, or NOW in FLAGS_1
#   stack      -fstack-protector-strong: __stack_chk_fail imported
#   fortify    -D_FORTIFY_SOURCE=2: a __*_chk function imported
#
# The environment gives HARDEN_CFLAGS and HARDEN_LDFLAGS (configure's;
# --disable-hardening leaves them empty, and nothing is checked) and
# READELF (else readelf).  It prints a line for each failure and a last
# line as Check's, and exits 1 when a check failed.

readelf=${READELF:-readelf}
programs="ankusad ankusactl ankusa-edge ankusa-deliver ankusa-gateway"
checks=0
failures=0

fail() {
	echo "check_hardening: $1"
	failures=$((failures + 1))
}

has() {
	case " $1 " in
	*" $2 "*) return 0 ;;
	esac
	return 1
}

command -v "$readelf" >/dev/null 2>&1 || {
	echo "check_hardening: no $readelf (binutils)"
	echo "0%: Checks: 1, Failures: 0, Errors: 1"
	exit 1
}
for p in $programs; do
	[ -f "$p" ] || { fail "$p: not built"; continue; }
	hdr=$("$readelf" -hlW "$p" 2>/dev/null)
	dyn=$("$readelf" -dW "$p" 2>/dev/null)
	syms=$("$readelf" --dyn-syms -W "$p" 2>/dev/null)
	if has "$HARDEN_LDFLAGS" -pie; then
		checks=$((checks + 1))
		echo "$hdr" | grep -q 'Type: *DYN' &&
		    echo "$hdr" | grep -q INTERP ||
		    fail "$p: not a position-independent executable"
	fi
	if has "$HARDEN_LDFLAGS" -Wl,-z,relro,-z,now; then
		checks=$((checks + 2))
		echo "$hdr" | grep -q GNU_RELRO || fail "$p: no GNU_RELRO"
		echo "$dyn" | grep -Eq 'BIND_NOW|FLAGS_1.*NOW' ||
		    fail "$p: not bound at load (BIND_NOW)"
	fi
	if has "$HARDEN_CFLAGS" -fstack-protector-strong; then
		checks=$((checks + 1))
		echo "$syms" | grep -q '__stack_chk_fail' ||
		    fail "$p: no stack protector (__stack_chk_fail)"
	fi
	if has "$HARDEN_CFLAGS" -D_FORTIFY_SOURCE=2; then
		checks=$((checks + 1))
		echo "$syms" | grep -Eq '__[a-z_]+_chk' ||
		    fail "$p: not fortified (no __*_chk)"
	fi
done
pct=100
[ "$checks" -eq 0 ] || pct=$(( (checks - failures) * 100 / checks ))
echo "$pct%: Checks: $checks, Failures: $failures, Errors: 0"
[ "$failures" -eq 0 ]
