#!/usr/bin/env bash
# Smoke-test the built installer headless (after `make package`):
#   - the frozen CLI: --version, init, import-annotations --render (runs the multiprocess glyph
#     renderer inside the frozen app), export-annotations (must equal the shipped CSV
#     byte for byte), render (images must equal those of the source tree, when .venv exists);
#   - the GUI on the offscreen platform: `gui --demo` builds the demo project and must still be
#     running when `timeout` kills it (exit 124), with no traceback;
#   - the GUI on X11 (xcb) under xvfb-run, when xvfb-run and xwininfo are installed: the main
#     window must be mapped;
#   - the .deb: `dpkg-deb --info/--contents`, the expected paths, the desktop entry
#     (desktop-file-validate when installed), the icon, and the bundle unpacked from the .deb.
#     With SMOKE_INSTALL=1 (as root) it also installs the .deb with apt-get, runs
#     /usr/bin/analogy-studio --version and removes the package again (dpkg -r).
# Every check prints one "ok"/"FAIL" line; the exit status is the number of failures.
#
# Usage: bash packaging/smoke.sh [BUNDLE_DIR [DEB]]
# Environment: SMOKE_GUI_SECONDS (how long the GUI runs, default 30), SMOKE_INSTALL, KEEP=1
# (keep the temporary folder).
set -uo pipefail
cd "$(dirname "$0")/.."

NAME=analogy-studio
PY=${PY:-.venv/bin/python}
BUNDLE=$(realpath "${1:-dist/$NAME}")
EXE=$BUNDLE/$NAME
DEB=${2:-}
if [ -z "$DEB" ]; then
  DEB=$(ls -t dist/${NAME}_*.deb 2>/dev/null | head -n 1)
fi
GUI_SECONDS=${SMOKE_GUI_SECONDS:-30}

[ -x "$EXE" ] || { echo "smoke.sh: no bundle at $EXE; run \`make package\` first" >&2; exit 1; }

TMP=$(mktemp -d -t analogy-smoke.XXXXXX)
cleanup() {
  if [ "${KEEP:-0}" = 1 ]; then echo "smoke.sh: kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT

# A clean user: its own data, cache and config folders, a settings file with an annotator name
# (else the GUI asks for one), a fixed author for the CLI.
export XDG_DATA_HOME=$TMP/data XDG_CACHE_HOME=$TMP/cache XDG_CONFIG_HOME=$TMP/config
export ANALOGY_STUDIO_SETTINGS=$TMP/settings.ini ANALOGY_STUDIO_AUTHOR=smoke
printf '[annotator]\nname=smoke\n' >"$ANALOGY_STUDIO_SETTINGS"
unset QT_QPA_PLATFORM

failures=0
ok() { echo "ok    $*"; }
fail() { echo "FAIL  $*"; failures=$((failures + 1)); }
check() { # check DESCRIPTION COMMAND...: ok when the command succeeds
  local what=$1; shift
  if "$@" >"$TMP/last.out" 2>&1; then ok "$what"; else fail "$what"; sed 's/^/      /' "$TMP/last.out" | tail -n 20; fi
}
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
no_traceback() { ! grep -q "Traceback (most recent call last)" "$1"; }

echo "smoke.sh: bundle $BUNDLE ($(du -sh "$BUNDLE" | cut -f1)), deb ${DEB:-none}, $(nproc) CPUs"

# ------------------------------------------------------------------------------ CLI
want_version=$("$PY" -c 'import studio; print(studio.__version__)' 2>/dev/null || true)
got=$("$EXE" --version 2>&1)
if [ -n "$want_version" ] && [ "$got" != "$NAME $want_version" ]; then
  fail "--version: '$got', expected '$NAME $want_version'"
elif [[ "$got" == "$NAME "* ]]; then ok "--version: $got"
else fail "--version: '$got'"
fi

P=$TMP/p.studio
CSV=$BUNDLE/_internal/resources/ua/annotations.csv
check "init $P" "$EXE" init "$P"

# Watch the process tree while rendering: the renderer's worker processes are new copies of
# the frozen executable (fork server or spawn), diverted by freeze_support() in the launcher.
t0=$(now)
"$EXE" import-annotations "$P" "$CSV" --render >"$TMP/import.out" 2>&1 &
pid=$!
helpers=""
while kill -0 "$pid" 2>/dev/null; do
  helpers+=$(ps -o args= --ppid "$pid" 2>/dev/null; ps -eo ppid=,args= 2>/dev/null \
    | awk -v p="$pid" '$0 ~ /multiprocessing/ {print}')
  sleep 0.05
done
wait "$pid"; rc=$?
t_import=$(secs "$t0" "$(now)")
if [ $rc -eq 0 ] && no_traceback "$TMP/import.out"; then
  ok "import-annotations --render: $(head -n 1 "$TMP/import.out" | cut -c1-90)... ($t_import s)"
else
  fail "import-annotations --render exited $rc"; tail -n 30 "$TMP/import.out" | sed 's/^/      /'
fi
if grep -q "multiprocessing.forkserver" <<<"$helpers"; then
  ok "renderer ran in worker processes (fork server started from the frozen executable)"
elif grep -q "multiprocessing" <<<"$helpers"; then
  ok "renderer ran in worker processes (spawn)"
elif [ "$(nproc)" -gt 1 ]; then
  echo "note  no renderer worker process was seen (the batch may have been too quick to catch)"
fi
n_png=$(find "$XDG_CACHE_HOME" -name '*.png' | wc -l)
[ "$n_png" -gt 1000 ] && ok "render cache holds $n_png glyph images" \
  || fail "render cache holds only $n_png glyph images"

check "export-annotations" "$EXE" export-annotations "$P" "$TMP/out.csv"
if cmp -s "$TMP/out.csv" resources/ua/annotations.csv; then
  ok "exported CSV is identical to resources/ua/annotations.csv ($(wc -l <"$TMP/out.csv") lines)"
else
  fail "exported CSV differs from resources/ua/annotations.csv"
  diff "$TMP/out.csv" resources/ua/annotations.csv | head -n 10 | sed 's/^/      /'
fi

# The frozen Pillow/FreeType must draw exactly what the source tree draws.
check "render to PNG files (frozen)" "$EXE" render "$P" "$TMP/png-frozen"
if [ -x "$PY" ]; then
  cp "$P" "$TMP/q.studio"
  if XDG_CACHE_HOME=$TMP/cache-src "$PY" -m studio render "$TMP/q.studio" "$TMP/png-src" \
      >"$TMP/src-render.out" 2>&1; then
    if diff -rq "$TMP/png-frozen" "$TMP/png-src" >"$TMP/png.diff"; then
      ok "frozen and source-tree renders are byte-identical ($(ls "$TMP/png-frozen" | wc -l) files)"
    else
      fail "frozen and source-tree renders differ"; head -n 10 "$TMP/png.diff" | sed 's/^/      /'
    fi
  else
    echo "note  source-tree render failed; skipped the image comparison"
  fi
fi

# ------------------------------------------------------------------------------ baselines
# torch in the frozen app: the CLI's in-process run, then a job in a worker process (the
# frozen executable started as `worker run`, as the Baselines tab does). A library torch opens
# with ctypes (libtorch_global_deps.so) once went missing here and nothing noticed.
check "generate a 150-puzzle split (frozen)" "$EXE" -q generate "$P" "$TMP/split" --n 150 --seed 1 --sampling balanced
check "vet the split (frozen)" "$EXE" -q vet "$TMP/split"
check "baseline --models blind (frozen, in process)" "$EXE" -q baseline "$TMP/split" --models blind --seeds 1 --epochs 1 --no-plots
check "jobs baseline (frozen, in a worker process)" "$EXE" -q jobs baseline "$P" "$TMP/split" --models blind,probes --seeds 1 --epochs 1 --device cpu
[ -s "$P.jobs/1/report.json" ] && ok "the worker's report: $P.jobs/1/report.json" \
  || fail "the baseline job wrote no report.json"
# pyarrow in the frozen app: publish the curated set of an old-format project (migrated first).
if [ -f tests/fixtures/projects/format-5.studio ]; then
  cp tests/fixtures/projects/format-5.studio "$TMP/f5.studio"
  check "export-set of a migrated format-5 project (frozen: Parquet, Croissant)" \
    "$EXE" -q export-set "$TMP/f5.studio" 1 "$TMP/published" --status any --drop-invalid
  [ -s "$TMP/published/records.parquet" ] && [ -f "$TMP/f5.studio.bak-format5" ] \
    && ok "records.parquet written; the format-5 original kept as a backup" \
    || fail "no records.parquet or no backup of the format-5 project"
fi
check "3D: KiVA trials (frozen, pyrender)" "$EXE" -q generate "$TMP/kiva" --family kiva --n 2 --seed 1
# a pilot study from the installed app: jsPsych and the experiment travel in the bundle
check "suggest --features-only (frozen: the tagger's suggestions)" "$EXE" -q suggest "$P" --concept closure --n 5 --features-only --json
check "suggest with the learned encoder (frozen: torch trains it)" "$EXE" -q suggest "$P" --concept closure --n 5 --json
check "pilot export (frozen)" "$EXE" -q pilot export "$TMP/split" "$TMP/pilot" --participants 10 --per-participant 10 --responses-per-item 1
for f in index.html experiment.js pilot.js pilot.json jspsych/jspsych.js jspsych/plugin-html-button-response.js psychopy/conditions.csv; do
  [ -s "$TMP/pilot/$f" ] || { fail "the pilot lacks $f"; continue; }
done
[ -s "$TMP/pilot/jspsych/jspsych.js" ] && ok "the pilot holds jsPsych and its plan"

# ------------------------------------------------------------------------------ lab database
# the bundle's psycopg, keyring and the server-side rules, against a throwaway PostgreSQL
if [ -x "$PY" ]; then
  "$PY" packaging/lab_smoke.py "$EXE"
  rc=$?
  if [ $rc -ne 0 ] && [ $rc -ne 77 ]; then failures=$((failures + 1)); fi
fi

# ------------------------------------------------------------------------------ GUI
t0=$(now)
QT_QPA_PLATFORM=offscreen timeout "$GUI_SECONDS" "$EXE" gui --demo >"$TMP/gui.out" 2>&1
rc=$?
demo=$XDG_DATA_HOME/$NAME/ua-demo.studio
if [ $rc -eq 124 ] && no_traceback "$TMP/gui.out" && [ -f "$demo" ] \
    && grep -q "ua-demo.studio" "$ANALOGY_STUDIO_SETTINGS"; then
  ok "gui --demo (offscreen): built the demo, opened it, still running after ${GUI_SECONDS} s (exit 124)"
else
  fail "gui --demo (offscreen): exit $rc, demo $( [ -f "$demo" ] && echo built || echo missing)"
fi
grep -v "propagateSizeHints" "$TMP/gui.out" | head -n 20 | sed 's/^/      /'

if command -v xvfb-run >/dev/null && command -v xwininfo >/dev/null; then
  cat >"$TMP/xcb.sh" <<EOF
QT_QPA_PLATFORM=xcb "$EXE" gui --demo >"$TMP/xcb.out" 2>&1 &
pid=\$!
for _ in \$(seq 60); do
  xwininfo -root -tree | grep -q "ua-demo.studio — Analogy Studio\"" && break
  sleep 0.5
done
xwininfo -root -tree | grep "Analogy Studio\"" >"$TMP/xcb.windows"
kill -0 \$pid && kill \$pid
wait \$pid
EOF
  timeout 60 xvfb-run -a -s "-screen 0 1400x900x24" bash "$TMP/xcb.sh" >/dev/null 2>&1
  if grep -q "ua-demo.studio — Analogy Studio" "$TMP/xcb.windows" && no_traceback "$TMP/xcb.out"; then
    main_window=$(grep "ua-demo.studio — Analogy Studio" "$TMP/xcb.windows" | head -n 1)
    ok "gui --demo (xcb under Xvfb): main window $(grep -oE '[0-9]+x[0-9]+\+[0-9]+\+[0-9]+' <<<"$main_window" | head -n 1) mapped"
  else
    fail "gui --demo (xcb under Xvfb): no main window"; sed 's/^/      /' "$TMP/xcb.out" | head -n 20
  fi
else
  echo "note  xvfb-run/xwininfo not installed: skipped the X11 window check"
fi

# ------------------------------------------------------------------------------ .deb
if [ -z "$DEB" ] || [ ! -f "$DEB" ]; then
  fail "no .deb found in dist/"
else
  echo "--- dpkg-deb --info $DEB"
  dpkg-deb --info "$DEB" | sed 's/^/      /'
  dpkg-deb --contents "$DEB" >"$TMP/contents.txt" && ok "dpkg-deb --contents: $(wc -l <"$TMP/contents.txt") entries" \
    || fail "dpkg-deb --contents"
  grep -E " \./(usr|opt/$NAME/$NAME$)" "$TMP/contents.txt" | grep -v "/$" | sed 's/^/      /'
  for path in "./opt/$NAME/$NAME" "./usr/bin/$NAME" "./usr/share/applications/$NAME.desktop" \
      "./usr/share/icons/hicolor/256x256/apps/$NAME.png" \
      "./opt/$NAME/_internal/resources/ua/annotations.csv" "./opt/$NAME/_internal/schemas/ua-1.0.json"; do
    grep -q " $path\( \|$\)" "$TMP/contents.txt" || fail "the .deb lacks $path"
  done
  if awk '{print $2}' "$TMP/contents.txt" | grep -qv '^root/root$'; then
    fail "the .deb has files not owned by root/root"
  else
    ok "all files in the .deb are owned by root/root"
  fi
  field() { dpkg-deb --field "$DEB" "$1"; }
  [[ "$(field Depends)" == *fonts-symbola* ]] && ok "Depends: $(field Depends)" || fail "Depends lacks fonts-symbola"

  X=$TMP/deb-root
  dpkg-deb -x "$DEB" "$X"
  check "unpacked .deb: /opt/$NAME/$NAME --version" "$X/opt/$NAME/$NAME" --version
  if grep -qx "exec /opt/$NAME/$NAME \"\$@\"" "$X/usr/bin/$NAME" && [ -x "$X/usr/bin/$NAME" ]; then
    ok "/usr/bin/$NAME execs /opt/$NAME/$NAME"
  else
    fail "/usr/bin/$NAME is not the expected launcher"
  fi
  desktop=$X/usr/share/applications/$NAME.desktop
  if command -v desktop-file-validate >/dev/null; then
    check "desktop-file-validate $NAME.desktop" desktop-file-validate "$desktop"
  fi
  grep -qx "Exec=$NAME gui %f" "$desktop" && grep -qx "Icon=$NAME" "$desktop" \
    && grep -qx "MimeType=application/x-analogy-studio-project;" "$desktop" \
    && ok "desktop entry: Exec=$NAME gui %f, Icon=$NAME, the project MIME type" \
    || fail "desktop entry Exec/Icon/MimeType"
  [ -f "$X/usr/share/mime/packages/$NAME.xml" ] && ok "MIME type file in the .deb" \
    || fail "no /usr/share/mime/packages/$NAME.xml in the .deb"
  icon=$X/usr/share/icons/hicolor/256x256/apps/$NAME.png
  if [ -x "$PY" ] && "$PY" -c '
import sys
from PIL import Image
with Image.open(sys.argv[1]) as im:
    assert im.format == "PNG" and im.size == (256, 256), (im.format, im.size)
' "$icon" 2>"$TMP/icon.err"; then
    ok "icon is a 256×256 PNG"
  elif [ -x "$PY" ]; then
    fail "icon: $(cat "$TMP/icon.err" | tail -n 1)"
  fi

  if [ "${SMOKE_INSTALL:-0}" = 1 ]; then
    if [ "$(id -u)" != 0 ]; then
      echo "note  SMOKE_INSTALL=1 needs root; skipped the real install"
    elif dpkg-query -W -f='${Status}' "$NAME" 2>/dev/null | grep -q "install ok installed"; then
      echo "note  $NAME is already installed on this machine; skipped the install test"
    else
      check "apt-get install ./$DEB" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -q --no-install-recommends "./$DEB"
      check "installed: /usr/bin/$NAME --version" "/usr/bin/$NAME" --version
      check "dpkg -r $NAME" dpkg -r "$NAME"
      [ ! -e "/usr/bin/$NAME" ] && [ ! -e "/opt/$NAME" ] && ok "removed cleanly" \
        || fail "files left behind after dpkg -r"
    fi
  fi
fi

echo
if [ $failures -eq 0 ]; then echo "smoke.sh: all checks passed"; else echo "smoke.sh: $failures check(s) FAILED"; fi
exit $failures
