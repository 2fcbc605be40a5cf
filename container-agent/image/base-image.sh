#!/usr/bin/env bash
# Makes a Debian bookworm base image for the agent image where no public image registry is
# reachable: debootstrap (minbase) from the Debian mirror that apt on this machine already uses,
# trimmed like the official slim images, imported into the engine as localhost/debian:bookworm.
# Does nothing if that image already exists (the engine's storage is the cache between runs).
#   bash container-agent/image/base-image.sh            # podman, or ENGINE=docker
# The mirror is read from /etc/apt/sources.list(.d); no mirror host is written in this repository.
set -euo pipefail
engine=${ENGINE:-$(command -v podman >/dev/null 2>&1 && echo podman || echo docker)}
image=${BASE_IMAGE:-localhost/debian:bookworm}
if "$engine" image exists "$image" 2>/dev/null \
   || { [ "$engine" = docker ] && docker image inspect "$image" >/dev/null 2>&1; }; then
  echo "base image $image already present"
  exit 0
fi
command -v debootstrap >/dev/null || { echo "debootstrap is not installed (apt-get install debootstrap)" >&2; exit 1; }

# The first Debian (not security) mirror apt uses: deb822 "URIs:" lines or one-line "deb URL suite".
mirror=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null \
           | awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i !~ /security/) { print $i; exit } }')
if [ -z "$mirror" ]; then
  mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
             | awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^https?:/ && $i !~ /security/) { print $i; exit } }')
fi
[ -n "$mirror" ] || { echo "no Debian mirror found in the apt sources" >&2; exit 1; }
echo "building $image from $mirror"

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
# Same exclusions as the slim images: no manuals, docs or translations (they are most of the size).
mkdir -p "$root/etc/dpkg/dpkg.cfg.d"
cat >"$root/etc/dpkg/dpkg.cfg.d/docker-slim" <<'CFG'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
CFG
debootstrap --variant=minbase bookworm "$root" "$mirror" >/dev/null
# debootstrap unpacks the essential packages itself, past dpkg's path-exclude (which only the
# packages installed later honour), so remove now what the rules above would have left out:
# 38 of the 116 MB otherwise (78 MB with them gone).
find "$root/usr/share/doc" -depth -type f ! -name copyright -delete
find "$root/usr/share/doc" -empty -delete
rm -rf "$root"/usr/share/man/* "$root"/usr/share/groff/* "$root"/usr/share/info/* \
  "$root"/usr/share/locale/* "$root"/usr/share/lintian/* "$root"/usr/share/linda/*
# The image's own apt then uses the same mirror (and its security suite, if the host has one).
security=$(cat /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null \
             | grep -oE 'https?://[^ ]*security[^ ]*' | head -1 || true)
{
  echo "deb $mirror bookworm main"
  echo "deb $mirror bookworm-updates main"
  [ -n "$security" ] && echo "deb $security bookworm-security main"
} >"$root/etc/apt/sources.list"
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/cache/apt/*.bin "$root"/var/lib/apt/lists/*
tar -C "$root" -c . | "$engine" import --change 'CMD ["/bin/bash"]' - "$image" >/dev/null
echo "base image $image: $("$engine" image inspect "$image" --format '{{.Size}}') bytes"
