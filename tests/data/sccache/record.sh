#!/bin/sh
# Re-record the sccache statistics these tests parse: Debian's sccache (0.4.0-pre) with its
# local-disk backend around small C compiles, in a temporary folder, on a port of its own.
#   cold:  an empty cache, two compiles (2 misses)
#   warm:  the same two compiles again (2 hits)
#   mixed: warm cache, one source changed and one added, plus a link (2 hits, 2 misses,
#          1 non-compilation call)
# Each as `--show-stats` text and `--show-stats --stats-format=json`.
# Usage: tests/data/sccache/record.sh [OUTDIR]   (default: this script's folder)
set -eu
out=$(cd "${1:-$(dirname "$0")}" && pwd)
work=$(mktemp -d /tmp/sccache-recording.XXXXXX)
trap 'sccache --stop-server >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
export HOME="$work/home" SCCACHE_DIR="$work/cache" SCCACHE_SERVER_PORT=${SCCACHE_SERVER_PORT:-42619}
export SCCACHE_IDLE_TIMEOUT=0
mkdir -p "$HOME" "$SCCACHE_DIR"
cd "$work"
printf '#include <stdio.h>\nint add(int a, int b);\nint main(void) { printf("%%d\\n", add(2, 3)); return 0; }\n' > main.c
printf 'int add(int a, int b) { return a + b; }\n' > add.c

round() { # NAME: zero the counters, compile, record both formats
  sccache --zero-stats >/dev/null
  shift_sources "$1"
  sccache --show-stats > "$out/$1.txt"
  sccache --show-stats --stats-format=json > "$out/$1.json"
  echo >> "$out/$1.json"
}
shift_sources() {
  case $1 in
    cold | warm)
      sccache gcc -c main.c -o main.o
      sccache gcc -c add.c -o add.o ;;
    mixed)
      printf 'int add(int a, int b) { return b + a; }\n' > add.c
      printf 'int mul(int a, int b) { return a * b; }\n' > mul.c
      sccache gcc -c main.c -o main.o
      sccache gcc -c add.c -o add.o
      sccache gcc -c mul.c -o mul.o
      printf 'int add(int a, int b) { return a + b; }\n' > add.c
      sccache gcc -c add.c -o add.o
      sccache gcc main.o add.o -o main ;;
  esac
}
sccache --start-server >/dev/null
round cold
round warm
round mixed
sccache --version > "$out/VERSION"
