#!/bin/sh
# SPDX-License-Identifier: ISC
#
# check_layout.sh: the boundaries between the master's folders
# (docs/ARCHITECTURE), run by make check from the build directory.
#
#   store      no product file outside daemon/store/ includes <db.h> or
#              one of the store's inner headers (every header of
#              daemon/store/ but its faces, store.h and store_group.h)
#   dispatch   a file of daemon/dispatch/ includes only its own folder's
#              headers, common/'s and the store's face: none of
#              pipeline/, admin/, the program (daemon/) or workers/
#   libdb      libdispatch.a leaves no symbol of Berkeley DB undefined
#   scheduler  libdispatch.a leaves no symbol undefined that another of
#              the master's libraries defines: it links nothing but
#              common/
#   makefile   Makefile.am links libdb ($(DB_LIBS)) with the store's
#              library alone (STORE_LIBS)
#
# A product file is one of common/, ctl/, daemon/ and workers/; tests and
# scripts may include what they need.  The environment gives top_srcdir
# (else the parent of this file's folder), CC and DB_LIBS (configure's,
# to find libdb), NM (else nm).  It prints a line for each failure and a
# last line as Check's ("100%: Checks: 5, Failures: 0, Errors: 0"), and
# exits 1 when a check failed.

top=${top_srcdir:-$(dirname "$0")/..}
nm=${NM:-nm}
cc=${CC:-cc}
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
checks=0
failures=0
bad=0

# A failure of the check under way: its line (Check's form).
fail() {
	name=$1
	shift
	echo "tests/check_layout.sh:0:F:layout:$name:0: $*"
	bad=1
}

# A check begins; the one before it is counted.
check() {
	[ "$bad" -eq 0 ] || failures=$((failures + 1))
	bad=0
	[ "$1" = end ] || checks=$((checks + 1))
}

# The quoted includes of a file, one a line.
includes() {
	sed -n 's/^[ \t]*#[ \t]*include[ \t]*"\([^"]*\)".*/\1/p' "$1"
}

# --- store: <db.h> and the store's inner headers stay in daemon/store/
check store
faces="store.h store_group.h"
inner=""
for h in "$top"/daemon/store/*.h; do
	b=$(basename "$h")
	case " $faces " in
	*" $b "*) ;;
	*) inner="$inner $b" ;;
	esac
done
[ -n "$inner" ] || fail store "no inner header found in $top/daemon/store"
for f in "$top"/common/*.[ch] "$top"/ctl/*.[ch] "$top"/daemon/*.[ch] \
    "$top"/daemon/*/*.[ch] "$top"/workers/*.[ch]; do
	[ -f "$f" ] || continue
	rel=${f#"$top"/}
	case $rel in
	daemon/store/*) continue ;;
	esac
	if grep -Eq '^[[:space:]]*#[[:space:]]*include[[:space:]]*<db\.h>' "$f"; then
		fail store "$rel includes <db.h>: only daemon/store/ may"
	fi
	for i in $(includes "$f"); do
		case " $inner " in
		*" $(basename "$i") "*)
			fail store "$rel includes \"$i\", an inner header of" \
			    "the store: only daemon/store/ may" ;;
		esac
	done
done

# --- dispatch: its own folder, common/ and the store's face
check dispatch
[ -f "$top/daemon/dispatch/dispatch.c" ] ||
    fail dispatch "no scheduler in $top/daemon/dispatch"
for f in "$top"/daemon/dispatch/*.[ch]; do
	[ -f "$f" ] || continue
	rel=${f#"$top"/}
	for i in $(includes "$f"); do
		[ "$i" = config.h ] && continue
		case $i in
		store/store.h) continue ;;
		*/*) fail dispatch "$rel includes \"$i\": the scheduler" \
			 "includes nothing of pipeline/, admin/ or the program"
			continue ;;
		esac
		if [ -f "$top/daemon/dispatch/$i" ] || [ -f "$top/common/$i" ]
		then
			continue
		fi
		fail dispatch "$rel includes \"$i\", which is neither" \
		    "daemon/dispatch/'s, common/'s nor the store's face"
	done
done

# --- libdb: no symbol of Berkeley DB undefined in the scheduler
check libdb
if [ ! -f libdispatch.a ]; then
	fail libdb "libdispatch.a is not built (make check builds it)"
else
	"$nm" -u libdispatch.a 2>/dev/null | awk 'NF == 2 { print $2 }' |
	    sort -u >"$tmp/undef"
	lib=""
	for l in ${DB_LIBS:--ldb-5.3}; do
		case $l in
		-l*) lib=$("$cc" -print-file-name="lib${l#-l}.so") ;;
		esac
	done
	if [ -z "$lib" ] || [ ! -f "$lib" ]; then
		fail libdb "libdb not found from DB_LIBS=\"$DB_LIBS\" to check" \
		    "libdispatch.a against"
	else
		"$nm" -D --defined-only "$lib" | awk 'NF == 3 { print $3 }' |
		    sed 's/@.*//' | sort -u >"$tmp/libdb"
		[ -s "$tmp/libdb" ] ||
		    fail libdb "no symbol read from $lib"
		for s in $(comm -12 "$tmp/undef" "$tmp/libdb"); do
			fail libdb "libdispatch.a leaves $s undefined, a" \
			    "symbol of Berkeley DB: the scheduler links" \
			    "nothing but common/"
		done
	fi
fi

# --- scheduler: nothing of the other libraries of the master
check scheduler
others=""
for l in libstore.a libpipeline.a libadmin.a libmaster.a; do
	[ -f "$l" ] && others="$others $l"
done
if [ -z "$others" ] || [ ! -f libdispatch.a ]; then
	fail scheduler "the master's libraries are not built"
else
	# shellcheck disable=SC2086
	"$nm" --defined-only $others 2>/dev/null |
	    awk 'NF == 3 && $2 ~ /[A-Z]/ { print $3 }' | sort -u >"$tmp/others"
	for s in $(comm -12 "$tmp/undef" "$tmp/others"); do
		fail scheduler "libdispatch.a leaves $s undefined, which" \
		    "another of the master's libraries defines: the" \
		    "scheduler links nothing but common/"
	done
fi

# --- makefile: libdb is linked with the store alone
check makefile
# (the tests' environment names it too, for this script)
grep -n '$(DB_LIBS)' "$top/Makefile.am" | grep -v '^[0-9]*:STORE_LIBS = ' |
    grep -v "DB_LIBS='\$(DB_LIBS)'" >"$tmp/dblibs"
while IFS= read -r line; do
	fail makefile "Makefile.am:$line: \$(DB_LIBS) outside STORE_LIBS:" \
	    "libdb is linked with the store's library alone"
done <"$tmp/dblibs"
check end

echo "$(((checks - failures) * 100 / checks))%: Checks: $checks," \
    "Failures: $failures, Errors: 0"
[ "$failures" -eq 0 ]
