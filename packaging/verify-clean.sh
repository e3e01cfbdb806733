#!/usr/bin/env bash
# Prove the .deb on a machine that has never seen the source tree (run by `make verify-clean`,
# as root, after `make package`):
#   1. build a minimal Debian 12 root from Debian's packages (mmdebstrap, variant apt; the
#      tarball is kept in build/verify-clean/ and reused for a week);
#   2. download the .deb's dependencies there from Debian (the only network use), then install
#      the .deb with apt inside the root with the network cut off (unshare --net);
#   3. there, as an ordinary user, offline: the GUI on the offscreen platform opens a project
#      (cold start to first window timed, page cache dropped first) and the demo project; the
#      CLI tags, generates and vets a split; a baseline job runs in a worker process of the
#      frozen app and writes its report; 3D stimuli render through EGL and through OSMesa;
#      project files of every earlier format (tests/fixtures/projects) open and are migrated
#      with a backup; the desktop entry and the .studio MIME type are registered;
#   4. `dpkg -P` and `apt-get autoremove --purge` leave no file the install added.
# Every check prints one "ok"/"FAIL" line (also in build/verify-clean/verify-clean.log, with
# every command's output); the exit status is the number of failures.
#
# Usage: sudo bash packaging/verify-clean.sh [DEB]
# Environment: MIRROR (default http://deb.debian.org/debian), KEEP=1 (keep the root),
# REBUILD_BASE=1 (build the base root again).
set -uo pipefail
cd "$(dirname "$0")/.."

NAME=analogy-studio
SUITE=bookworm
MIRROR=${MIRROR:-http://deb.debian.org/debian}
WORK=build/verify-clean
LOG=$WORK/verify-clean.log
DEB=${1:-$(ls -t dist/${NAME}_*.deb 2>/dev/null | head -n 1)}

die() { echo "verify-clean.sh: $*" >&2; exit 100; }
[ "$(id -u)" = 0 ] || die "run as root (it builds a Debian root and installs the .deb in it)"
[ -n "$DEB" ] && [ -f "$DEB" ] || die "no .deb: run \`make package\` first (or pass DEB)"
DEB=$(realpath "$DEB")
for tool in unshare chroot mount tar; do
  command -v "$tool" >/dev/null || die "$tool is missing"
done
if ! command -v mmdebstrap >/dev/null; then
  echo "verify-clean.sh: installing mmdebstrap"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q mmdebstrap >/dev/null \
    || die "mmdebstrap is missing and could not be installed (apt-get install mmdebstrap)"
fi
mkdir -p "$WORK"
: >"$LOG"

failures=0
ok() { echo "ok    $*" | tee -a "$LOG"; }
fail() { echo "FAIL  $*" | tee -a "$LOG"; failures=$((failures + 1)); }
note() { echo "note  $*" | tee -a "$LOG"; }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
t_start=$(now)

# ------------------------------------------------------------------------------ the clean root
BASE=$WORK/$SUITE-apt.tar
if [ "${REBUILD_BASE:-0}" = 1 ] || [ ! -s "$BASE" ] || [ -n "$(find "$BASE" -mtime +7)" ]; then
  t0=$(now)
  echo "verify-clean.sh: building a minimal $SUITE root with mmdebstrap (a minute or two)"
  rm -rf "$BASE.part"
  if mmdebstrap --variant=apt --mode=root --format=tar "$SUITE" "$BASE.part" "$MIRROR" >>"$LOG" 2>&1; then
    mv "$BASE.part" "$BASE"
    note "base root built from $MIRROR in $(secs "$t0" "$(now)") s"
  else
    rm -rf "$BASE.part"; die "mmdebstrap failed (see $LOG)"
  fi
fi
ROOT=$(mktemp -d /var/tmp/analogy-clean.XXXXXX)
tar -C "$ROOT" -xf "$BASE" || { rm -rf "$ROOT"; die "cannot unpack $BASE (REBUILD_BASE=1 builds it again)"; }
cleanup() {
  for m in dev sys proc; do mountpoint -q "$ROOT/$m" && umount -R -l "$ROOT/$m"; done
  if [ "${KEEP:-0}" = 1 ]; then echo "verify-clean.sh: kept $ROOT"; else rm -rf "$ROOT"; fi
}
trap cleanup EXIT
mount -t proc proc "$ROOT/proc"
mount -t sysfs sys "$ROOT/sys"
mount --rbind /dev "$ROOT/dev" && mount --make-rslave "$ROOT/dev"  # with /dev/shm, /dev/pts
cp /etc/resolv.conf "$ROOT/etc/resolv.conf"

ENV=(env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive)
online() { chroot "$ROOT" "${ENV[@]}" HOME=/root "$@"; }
offline() { unshare --net chroot "$ROOT" "${ENV[@]}" HOME=/root "$@"; }
# The lab user: an ordinary account, no network, nothing of the source tree in sight.
echo "lab:x:1000:1000:Lab user:/home/lab:/bin/sh" >>"$ROOT/etc/passwd"
echo "lab:x:1000:" >>"$ROOT/etc/group"
mkdir -p "$ROOT/home/lab" && chown 1000:1000 "$ROOT/home/lab"
as_lab() {
  unshare --net chroot --userspec=1000:1000 "$ROOT" "${ENV[@]}" HOME=/home/lab USER=lab \
    XDG_RUNTIME_DIR=/tmp/lab-runtime QT_QPA_PLATFORM=offscreen ANALOGY_STUDIO_AUTHOR=lab \
    ANALOGY_STUDIO_SETTINGS=/home/lab/settings.ini "$@"
}
run_lab() { # run_lab DESCRIPTION COMMAND...: ok when it succeeds with no traceback
  local what=$1; shift
  local out="$WORK/last.out"
  if as_lab "$@" >"$out" 2>&1 && ! grep -q "Traceback (most recent call last)" "$out"; then
    ok "$what"
  else
    fail "$what"; tail -n 20 "$out" | sed 's/^/      /'
  fi
  { echo "--- $what: $*"; cat "$out"; } >>"$LOG"
}
printf '[annotator]\nname=lab\n' >"$ROOT/home/lab/settings.ini"
mkdir -p "$ROOT/tmp/lab-runtime" && chown 1000:1000 "$ROOT/tmp/lab-runtime" && chmod 700 "$ROOT/tmp/lab-runtime"

# What a clean system holds, to compare with after the purge.
# Not compared: pseudo and scratch folders, apt's and dpkg's own state, logs, the users' homes,
# and the backups adduser leaves when a dependency's maintainer script adds a system user
# (dbus adds "messagebus": /etc/shadow-, /etc/gshadow-).
snapshot() {
  chroot "$ROOT" find / -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /tmp \
    -o -path /run -o -path /var/cache -o -path /var/lib/apt -o -path /var/lib/dpkg \
    -o -path /var/log -o -path /home -o -path /root -o -path /etc/ld.so.cache \
    -o -path /var/tmp -o -path '/etc/*-' \) -prune -o -print | sort
}
snapshot >"$WORK/files-before.txt"
[ -e "$ROOT/work" ] && fail "the clean root has a /work folder" || ok "clean $SUITE root: $(wc -l <"$WORK/files-before.txt") files, no source tree"

# ------------------------------------------------------------------------------ install offline
cp "$DEB" "$ROOT/root/"
DEB_IN=/root/$(basename "$DEB")
t0=$(now)
if online apt-get update -q >>"$LOG" 2>&1 \
  && online apt-get install -y -q --download-only "$DEB_IN" >>"$LOG" 2>&1; then
  n_debs=$(find "$ROOT/var/cache/apt/archives" -name '*.deb' | wc -l)
  dl=$(du -sh "$ROOT/var/cache/apt/archives" | cut -f1)
  ok "dependencies downloaded from Debian $SUITE: $n_debs packages, $dl ($(secs "$t0" "$(now)") s)"
else
  fail "could not download the dependencies (see $LOG)"
fi
rm -f "$ROOT/etc/resolv.conf"
t0=$(now)
if offline apt-get install -y -q "$DEB_IN" >>"$LOG" 2>&1; then
  ok "apt-get install with no network: $(secs "$t0" "$(now)") s"
else
  fail "apt-get install with no network (see $LOG)"; exit "$failures"
fi
installed_kib=$(chroot "$ROOT" dpkg-query -W -f='${Installed-Size}' "$NAME")
note "installed size of $NAME: $((installed_kib / 1024)) MiB; .deb $(du -h "$DEB" | cut -f1)"
for f in /usr/bin/$NAME /opt/$NAME/$NAME /usr/share/applications/$NAME.desktop \
  /usr/share/icons/hicolor/256x256/apps/$NAME.png /usr/share/mime/packages/$NAME.xml; do
  [ -e "$ROOT$f" ] && ok "installed $f" || fail "missing $f"
done
if [ -e "$ROOT/usr/share/mime/application/x-analogy-studio-project.xml" ]; then
  ok "MIME type application/x-analogy-studio-project registered (shared-mime-info trigger)"
else
  fail "MIME type not registered in /usr/share/mime"
fi
if grep -qs "x-analogy-studio-project=$NAME.desktop" "$ROOT/usr/share/applications/mimeinfo.cache"; then
  ok ".studio files open with $NAME.desktop (mimeinfo.cache)"
else
  fail ".studio files are not associated with $NAME.desktop"
fi

# ------------------------------------------------------------------------------ the frozen app
run_lab "analogy-studio --version" analogy-studio --version
note "$(cat "$WORK/last.out")"
H=/home/lab
run_lab "init a project" analogy-studio init $H/p.studio
CSV=/opt/$NAME/_internal/resources/ua/annotations.csv
t0=$(now)
run_lab "import-annotations --render (UA's 1,512 tags)" \
  analogy-studio -q import-annotations $H/p.studio $CSV --render
note "import and render: $(secs "$t0" "$(now)") s"
run_lab "tag two glyphs from the CLI" analogy-studio tag $H/p.studio aspect=tall U+25AF@symbola U+2016@symbola
grep -q "tagged 2 of 2" "$WORK/last.out" || fail "tag did not tag two glyphs: $(cat "$WORK/last.out")"
run_lab "generate a 300-puzzle split" \
  analogy-studio -q generate $H/p.studio $H/split --n 300 --seed 1 --sampling balanced
run_lab "vet the split" analogy-studio -q vet $H/split
t0=$(now)
run_lab "a baseline job in a worker process of the frozen app" \
  analogy-studio jobs baseline $H/p.studio $H/split --models blind,probes --seeds 1 --epochs 2 --device cpu
note "baseline job: $(secs "$t0" "$(now)") s; $(grep -m1 'cpu' "$WORK/last.out" | cut -c1-80)"
if [ -s "$ROOT$H/p.studio.jobs/1/report.json" ]; then
  ok "the job's report: $H/p.studio.jobs/1/report.json"
else
  fail "no report.json from the baseline job"
fi
run_lab "3D: KiVA trials drawn through EGL" \
  env PYOPENGL_PLATFORM=egl analogy-studio -q generate $H/kiva --family kiva --n 3 --seed 1
run_lab "3D: polycube rotations drawn through OSMesa" \
  env PYOPENGL_PLATFORM=osmesa analogy-studio -q generate $H/poly --family polycube-rotation --n 3 --seed 1
n_png=$(find "$ROOT$H/kiva" "$ROOT$H/poly" -name '*.png' 2>/dev/null | wc -l)
[ "$n_png" -gt 0 ] && ok "3D pictures written: $n_png PNG files" || fail "no 3D pictures written"

# Upgrades: project files of every earlier format open in the packaged build, migrated with a
# backup that keeps the original bytes.
# (format-6.studio.xz is today's format: nothing to migrate.)
for fixture in tests/fixtures/projects/format-*.studio; do
  [ -e "$fixture" ] || { note "no project fixtures in tests/fixtures/projects"; break; }
  base=$(basename "$fixture")
  n=${base#format-}; n=${n%.studio}
  cp "$fixture" "$ROOT$H/$base" && chown 1000:1000 "$ROOT$H/$base"
  run_lab "open format $n ($base) in the packaged build" analogy-studio info $H/$base
  grep -q "format $n -> " "$WORK/last.out" || fail "$base: info did not report a migration from format $n"
  if cmp -s "$fixture" "$ROOT$H/$base.bak-format$n"; then
    ok "$base: migrated; the backup $base.bak-format$n keeps the original bytes"
  else
    fail "$base: no backup with the original bytes"
  fi
  run_lab "$base: export-annotations after the migration" \
    analogy-studio export-annotations $H/$base $H/$base.csv
done

if [ -e "$ROOT$H/format-5.studio" ]; then
  run_lab "export-set of the migrated format-5 project (Parquet, Croissant, card)" \
    analogy-studio -q export-set $H/format-5.studio 1 $H/published --status any --drop-invalid
  [ -s "$ROOT$H/published/records.parquet" ] && ok "records.parquet written" || fail "no records.parquet"
fi

# The GUI: cold start to first window (page cache dropped), then the demo project.
sync
if echo 3 >/proc/sys/vm/drop_caches 2>/dev/null; then cold=cold; else cold=warm; fi
t0=$(now)
run_lab "GUI (offscreen) opens a project" \
  env ANALOGY_STUDIO_FIRST_WINDOW=$H/first-window analogy-studio gui $H/p.studio
if [ -s "$ROOT$H/first-window" ]; then
  ok "$cold start to first window: $(secs "$t0" "$(cat "$ROOT$H/first-window")") s"
fi
t0=$(now)
run_lab "GUI (offscreen) again" \
  env ANALOGY_STUDIO_FIRST_WINDOW=$H/first-window analogy-studio gui $H/p.studio
[ -s "$ROOT$H/first-window" ] && note "warm start to first window: $(secs "$t0" "$(cat "$ROOT$H/first-window")") s"
rm -f "$ROOT$H/first-window"
run_lab "GUI (offscreen) builds and opens the demo project" \
  env ANALOGY_STUDIO_FIRST_WINDOW=$H/first-window timeout 600 analogy-studio gui --demo
[ -s "$ROOT$H/first-window" ] && ok "demo window up" || fail "the demo window never came up"

# ------------------------------------------------------------------------------ remove
if offline dpkg -P "$NAME" >>"$LOG" 2>&1 && offline apt-get autoremove --purge -y -q >>"$LOG" 2>&1; then
  ok "dpkg -P $NAME, apt-get autoremove --purge"
else
  fail "dpkg -P / autoremove failed (see $LOG)"
fi
snapshot >"$WORK/files-after.txt"
left=$(comm -13 "$WORK/files-before.txt" "$WORK/files-after.txt")
if [ -z "$left" ]; then
  ok "nothing left behind: the file list equals the clean root's"
else
  fail "$(wc -l <<<"$left") files left behind:"; head -n 20 <<<"$left" | sed 's/^/      /'
fi
grep -qs "x-analogy-studio" "$ROOT/usr/share/mime/globs2" && fail "MIME type still registered"

echo | tee -a "$LOG"
echo "verify-clean.sh: $(secs "$t_start" "$(now)") s; log in $LOG" | tee -a "$LOG"
if [ $failures -eq 0 ]; then
  echo "verify-clean.sh: all checks passed" | tee -a "$LOG"
else
  echo "verify-clean.sh: $failures check(s) FAILED" | tee -a "$LOG"
fi
exit "$failures"
