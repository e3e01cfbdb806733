#!/usr/bin/env bash
# Sets up everything `make run` and `make test` need on a Debian/Ubuntu machine:
# Debian packages (installed when run as root, otherwise the command is printed),
# a virtual environment in .venv and the pinned Python packages.
set -euo pipefail
cd "$(dirname "$0")/.."

DEB_PACKAGES=(
  python3-venv
  # glyph fonts: Symbola is UA's main font; Noto and the ancient-scripts set cover the rest
  fonts-symbola fonts-noto-core fonts-ancient-scripts fonts-wqy-microhei fonts-dejavu-core
  fontconfig
  # Qt (offscreen and xcb) and OpenGL/EGL for the renderer
  libegl1 libgl1 libegl-mesa0 libosmesa6 libopengl0 libglib2.0-0 libfontconfig1 libfreetype6 libdbus-1-3
  libxkbcommon0 libxkbcommon-x11-0 libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 libxcb-image0
  libxcb-render-util0 libxcb-shape0 libxcb-xinerama0 libxcb-xkb1 libxcb-randr0
  # a virtual screen for screenshots of a real window
  xvfb
  # the lab database (issue 17): tests start a throwaway PostgreSQL server (tests/pgserver.py)
  postgresql
  # pilot studies (issue 29): the exported experiment is tested in a real headless browser
  chromium chromium-driver
)
# jsPsych comes from the npm registry (package.json, package-lock.json); Node from Debian when
# the machine has none
if ! command -v npm >/dev/null 2>&1; then
  DEB_PACKAGES+=(nodejs npm)
fi

if command -v dpkg-query >/dev/null 2>&1; then
  missing=()
  for p in "${DEB_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = "0" ]; then
      echo "setup: installing Debian packages: ${missing[*]}"
      export DEBIAN_FRONTEND=noninteractive
      apt-get update -qq
      apt-get install -y -q --no-install-recommends "${missing[@]}"
    else
      echo "setup: these Debian packages are missing; install them with:" >&2
      echo "  sudo apt-get install --no-install-recommends ${missing[*]}" >&2
      echo "setup: continuing; fonts or Qt platform plugins may be unavailable until then." >&2
    fi
  fi
fi

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv with $($PYTHON --version)"
  "$PYTHON" -m venv .venv
fi
stamp=.venv/.installed
plugins_changed=no
for p in plugins/*/pyproject.toml; do
  [ -f "$p" ] && [ "$p" -nt "$stamp" ] && plugins_changed=yes
done
if [ ! -f "$stamp" ] || [ requirements.lock -nt "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ requirements-gl.lock -nt "$stamp" ] || [ "$plugins_changed" = yes ]; then
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -r requirements.lock
  # pyrender pins PyOpenGL 3.1.0 (no OSMesa fallback); the newer one goes in without deps
  .venv/bin/python -m pip install -q --no-deps -r requirements-gl.lock
  .venv/bin/python -m pip install -q --no-deps -e .
  # the plugins shipped in plugins/ (each its own package with an entry point; docs/plugins.md)
  for p in plugins/*/pyproject.toml; do
    [ -f "$p" ] && .venv/bin/python -m pip install -q --no-deps -e "$(dirname "$p")"
  done
  touch "$stamp"
fi
# jsPsych for `pilot export` (copied into each experiment, never loaded from a CDN)
if command -v npm >/dev/null 2>&1; then
  if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    echo "setup: installing jsPsych (npm ci)"
    npm ci --no-audit --no-fund --loglevel=error
  fi
else
  echo "setup: npm is missing; \`pilot export\` needs jsPsych (install nodejs and npm)" >&2
fi
echo "setup: ready ($(.venv/bin/python --version))"
