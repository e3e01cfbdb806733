#!/usr/bin/env bash
# Build the Analogy Studio installer (run by `make package`, from any folder):
#   1. a PyInstaller one-folder bundle in dist/analogy-studio/ (work files in build/pyinstaller/),
#   2. a Debian package dist/analogy-studio_<version>_<arch>.deb that installs the bundle in
#      /opt/analogy-studio, a launcher /usr/bin/analogy-studio, a desktop entry and an icon.
# Then prints sizes and times. Smoke-test the result with `bash packaging/smoke.sh`.
#
# Environment: PY (default .venv/bin/python), DEB_MAINTAINER (the .deb's Maintainer field),
# DEB_COMPRESS (xz, the default: 236 MB, about 5 minutes on 2 cores; zstd: 290 MB in 20 s, for
# quick development builds, needs dpkg >= 1.21.18 to install), DEB_LEVEL (the compressor's
# level; dpkg's default when unset: xz 6, zstd 3).
set -euo pipefail
cd "$(dirname "$0")/.."

# Pinned build tools: a different PyInstaller may bundle different files.
PYINSTALLER_VERSION=6.22.0
HOOKS_CONTRIB_VERSION=2026.9

PY=${PY:-.venv/bin/python}
NAME=analogy-studio
BUNDLE=dist/$NAME
WORK=build/pyinstaller
DEB_COMPRESS=${DEB_COMPRESS:-xz}
case "$DEB_COMPRESS" in xz|zstd|gzip) ;; *) echo "build.sh: DEB_COMPRESS must be xz, zstd or gzip" >&2; exit 1;; esac
DEB_MAINTAINER=${DEB_MAINTAINER:-Analogy Studio developers <analogy-studio@localhost>}
# Only Debian 12 packages. EGL and OSMesa both: pyrender draws through EGL, and through OSMesa
# where EGL finds no display or device; libgl1-mesa-dri carries Mesa's software rasteriser
# (llvmpipe) that EGL uses on a machine without a GPU. The xcb libraries are those Qt's xcb
# platform plugin loads that a minimal desktop may lack. The X11 client libraries after them are
# opened with ctypes by pyglet, which `import pyrender` imports (for its viewer) even offscreen:
# without libXrender the 3D renderer fails to load on a clean system (verify-clean.sh found it).
DEPENDS=(
  libc6 libegl1 libegl-mesa0 libgl1 libgl1-mesa-dri libosmesa6 libfontconfig1 libfreetype6
  libdbus-1-3 libxkbcommon0 libxkbcommon-x11-0 libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1
  libxcb-image0 libxcb-render-util0 libxcb-shape0 libxcb-xinerama0 libxcb-randr0
  libx11-6 libxext6 libxrender1 libxi6 libxinerama1 libxxf86vm1 libxrandr2 fonts-symbola
)
# Glyph fonts beyond Symbola: UA's annotations use Noto and the ancient-scripts fonts, and
# substitute WenQuanYi and DejaVu for a few code points (as the development setup does).
RECOMMENDS=(shared-mime-info desktop-file-utils fonts-noto-core fonts-ancient-scripts fonts-wqy-microhei fonts-dejavu-core)

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
human() { numfmt --to=iec --suffix=B --format='%.1f' "$1"; }
die() { echo "build.sh: $*" >&2; exit 1; }

[ -x "$PY" ] || die "no Python at $PY; run \`make setup\` first (or set PY)"
for tool in dpkg-deb dpkg ldd; do
  command -v "$tool" >/dev/null || die "$tool is missing (Debian: apt-get install dpkg binutils libc-bin)"
done
t_start=$(now)

# ----------------------------------------------------------------------------- PyInstaller
installed=$("$PY" - <<'EOF'
import importlib.metadata as m
out = []
for name in ("pyinstaller", "pyinstaller-hooks-contrib"):
    try:
        out.append(m.version(name))
    except m.PackageNotFoundError:
        out.append("-")
print(" ".join(out))
EOF
)
if [ "$installed" != "$PYINSTALLER_VERSION $HOOKS_CONTRIB_VERSION" ]; then
  echo "build.sh: installing pyinstaller==$PYINSTALLER_VERSION" \
    "pyinstaller-hooks-contrib==$HOOKS_CONTRIB_VERSION into $(dirname "$(dirname "$PY")")"
  "$PY" -m pip install -q "pyinstaller==$PYINSTALLER_VERSION" \
    "pyinstaller-hooks-contrib==$HOOKS_CONTRIB_VERSION"
fi

VERSION=$("$PY" -c 'import studio; print(studio.__version__)')
# PEP 440 pre-releases sort before the release in Debian only with a tilde: 1.0rc1 -> 1.0~rc1.
DEB_VERSION=$("$PY" -c '
import re, sys
print(re.sub(r"[.-]?(dev|a|b|rc)(\d*)", r"~\1\2", sys.argv[1]))' "$VERSION")
ARCH=$(dpkg --print-architecture)
DEB=dist/${NAME}_${DEB_VERSION}_${ARCH}.deb

echo "build.sh: building $NAME $VERSION with PyInstaller $PYINSTALLER_VERSION"
t0=$(now)
"$PY" -m PyInstaller --noconfirm --clean --log-level WARN \
  --distpath dist --workpath "$WORK" packaging/analogy-studio.spec
t_pyinstaller=$(secs "$t0" "$(now)")
[ -x "$BUNDLE/$NAME" ] || die "PyInstaller produced no $BUNDLE/$NAME"

# ----------------------------------------------------------------------------- .deb
t0=$(now)
STAGE=build/deb/${NAME}_${DEB_VERSION}_${ARCH}
rm -rf "$STAGE"
mkdir -p "$STAGE/DEBIAN" "$STAGE/opt" "$STAGE/usr/bin" "$STAGE/usr/share/applications" \
  "$STAGE/usr/share/icons/hicolor/256x256/apps" "$STAGE/usr/share/doc/$NAME" \
  "$STAGE/usr/share/mime/packages" "$STAGE/usr/share/icons/hicolor/256x256/mimetypes"
cp -a "$BUNDLE" "$STAGE/opt/$NAME"

cat >"$STAGE/usr/bin/$NAME" <<EOF
#!/bin/sh
# Analogy Studio launcher: the application is a self-contained bundle in /opt/$NAME.
exec /opt/$NAME/$NAME "\$@"
EOF
chmod 0755 "$STAGE/usr/bin/$NAME"
install -m 0644 packaging/$NAME.desktop "$STAGE/usr/share/applications/$NAME.desktop"
"$PY" packaging/make_icon.py "$STAGE/usr/share/icons/hicolor/256x256/apps/$NAME.png" 256
# The project files' MIME type (.studio); shared-mime-info's and desktop-file-utils' dpkg
# triggers update their caches when the package is installed or removed.
install -m 0644 packaging/$NAME-mime.xml "$STAGE/usr/share/mime/packages/$NAME.xml"
cp "$STAGE/usr/share/icons/hicolor/256x256/apps/$NAME.png" \
  "$STAGE/usr/share/icons/hicolor/256x256/mimetypes/application-x-analogy-studio-project.png"
cat >"$STAGE/usr/share/doc/$NAME/copyright" <<EOF
Analogy Studio $VERSION
License: MIT

/opt/$NAME bundles third-party components under their own licenses, among them Python
(PSF License), Qt 6 and PySide6 (LGPL-3.0, as separate shared libraries), NumPy and
OpenBLAS (BSD), Pillow (MIT-CMU), fontTools (MIT), SQLAlchemy (MIT) and jsonschema (MIT).
The UA annotation set in /opt/$NAME/_internal/resources/ua is described in its README.md.
EOF

# The oldest glibc the bundle can run on: the highest GLIBC_x.y symbol version any of its
# binaries asks for (the bundle carries its other libraries, but never libc).
GLIBC_MIN=$(
  { find "$BUNDLE" -type f \( -name '*.so*' -o -perm -u+x \) -print0 \
      | xargs -0 grep -aohE 'GLIBC_2\.[0-9]+(\.[0-9]+)?' 2>/dev/null || true; } \
    | sed 's/^GLIBC_//' | sort -uV | tail -n 1
)
depends=$(printf '%s, ' "${DEPENDS[@]}")
depends=${depends%, }
[ -n "$GLIBC_MIN" ] && depends=${depends/libc6/libc6 (>= $GLIBC_MIN)}
recommends=$(printf '%s, ' "${RECOMMENDS[@]}")
recommends=${recommends%, }
installed_kib=$(du -sk --exclude=DEBIAN "$STAGE" | cut -f1)

cat >"$STAGE/DEBIAN/control" <<EOF
Package: $NAME
Version: $DEB_VERSION
Architecture: $ARCH
Maintainer: $DEB_MAINTAINER
Installed-Size: $installed_kib
Depends: $depends
Recommends: $recommends
Section: science
Priority: optional
Homepage: https://github.com/analogy-studio/analogy-studio
Description: author visual-analogy stimuli from schema-tagged Unicode glyphs
 Analogy Studio is a desktop studio for building visual-analogy puzzles such as
 those of the Unicode Analogies benchmark: annotators tag Unicode glyphs with the
 values of a concept schema, curators draft and vet puzzles. Every action of the
 window has a command-line twin (analogy-studio --help).
 .
 This package carries its own Python and Qt in /opt/$NAME; it needs no
 network access to install or run.
EOF

# Everything root-owned (--root-owner-group), readable by all, writable only by root.
chmod -R u+rwX,go+rX,go-w "$STAGE"
chmod 0755 "$STAGE/DEBIAN"
rm -f "$DEB"
dpkg-deb --root-owner-group -Z"$DEB_COMPRESS" ${DEB_LEVEL:+-z"$DEB_LEVEL"} \
  --build "$STAGE" "$DEB" >/dev/null
rm -rf "$STAGE"
t_deb=$(secs "$t0" "$(now)")

# ----------------------------------------------------------------------------- summary
bundle_bytes=$(du -sb "$BUNDLE" | cut -f1)
deb_bytes=$(stat -c %s "$DEB")
n_files=$(find "$BUNDLE" -type f | wc -l)
echo
echo "build.sh: done in $(secs "$t_start" "$(now)") s"
echo "  bundle  $BUNDLE/  $(human "$bundle_bytes") in $n_files files  (PyInstaller: $t_pyinstaller s)"
echo "  deb     $DEB  $(human "$deb_bytes")  (staging + $DEB_COMPRESS: $t_deb s)"
echo "  needs   glibc >= ${GLIBC_MIN:-?}; Depends: $depends"
echo "  check   bash packaging/smoke.sh"
