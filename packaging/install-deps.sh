#!/usr/bin/env bash
# Installs every build and test dependency of fp8scope from Debian 12 packages, non-interactively and
# idempotently. With --python-venv DIR it also makes the test-only Python oracle environment in DIR
# (PyPI: torch CPU float8 casts, numpy, h5py, safetensors); the product itself never needs Python.
set -euo pipefail

venv=""
while [ $# -gt 0 ]; do
    case "$1" in
        --python-venv) venv="$2"; shift 2 ;;
        -h|--help) echo "usage: $0 [--python-venv DIR]"; exit 0 ;;
        *) echo "install-deps.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done

packages=(
    build-essential cmake ninja-build ccache pkg-config git
    qt6-base-dev qt6-base-dev-tools qt6-svg-dev libgl-dev libqcustomplot-dev
    libsqlite3-dev sqlite3 libhdf5-dev hdf5-tools libhwy-dev libdeflate-dev libyaml-cpp-dev libprotobuf-dev protobuf-compiler
    libqpdf-dev fonts-dejavu-core poppler-utils libzip-dev zlib1g-dev liblzma-dev libzstd-dev
    libopenmpi-dev openmpi-bin
    clang libclang-rt-14-dev
    python3 python3-venv python3-pip
    xvfb xauth
    lintian desktop-file-utils appstream shared-mime-info groff-base
)

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
    sudo_cmd=(sudo)
fi

missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "install-deps: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    "${sudo_cmd[@]}" apt-get update -qq
    "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
    echo "install-deps: all Debian packages present"
fi

if [ -n "$venv" ]; then
    here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
    if [ ! -x "$venv/bin/python" ]; then
        python3 -m venv "$venv"
    fi
    stamp="$venv/.fp8scope-requirements"
    if ! cmp -s "$here/requirements-test.txt" "$stamp"; then
        "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-cache-dir -r "$here/requirements-test.txt"
        cp "$here/requirements-test.txt" "$stamp"
    fi
fi
