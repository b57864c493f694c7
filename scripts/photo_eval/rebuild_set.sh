#!/usr/bin/env bash
# Rebuilds the 40-portrait evaluation set of SOURCES.md into OUT_DIR from snapshots of
# the two public repositories it names (git dirs, e.g. bare clones) and the repo's own
# Grace Hopper fixture. Usage:
#   bash scripts/photo_eval/rebuild_set.sh VOTEVIEW_GIT_DIR FACE_RECOGNITION_GIT_DIR OUT_DIR
# FFMPEG names the ffmpeg to use (default: the one on PATH).
set -euo pipefail
vv=$1 fr=$2 out=$3
ff=${FFMPEG:-ffmpeg}
here=$(cd "$(dirname "$0")/../.." && pwd)
vv_commit=687cf7a9212a445431ad7441d8bfd0b7bf297eff
fr_commit=2e2dccea9dd0ce730c8d464d0f67c6eebb40c9d1
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

vv() { git --git-dir="$vv" show "$vv_commit:images/wiki/$1.jpg" > "$2"; }
fr() { git --git-dir="$fr" show "$fr_commit:examples/$1" > "$2"; }
x2() { "$ff" -nostdin -v error -y -i "$1" -vf "scale=2*iw:2*ih:flags=lanczos$3" -q:v 2 "$2"; }

# name: VV id (plain), VV id ×2 (x2), or ×2 rotated by degrees with its crop.
while read -r name id how; do
  case $how in
    plain) vv "$id" "$out/$name" ;;
    x2) vv "$id" "$tmp/in.jpg" && x2 "$tmp/in.jpg" "$out/$name" "" ;;
    r*)
      deg=${how#r} crop=0.79
      [ "$deg" -lt 0 ] && crop=0.81
      vv "$id" "$tmp/in.jpg"
      x2 "$tmp/in.jpg" "$out/$name" \
        ",rotate=$deg*PI/180:fillcolor=black,crop=iw*$crop:ih*$crop"
      ;;
  esac
done <<'LIST'
cg-020501-old-white-hair-outdoor-capitol-roll.jpg 020501 plain
cg-021172-grey-backdrop-smile.jpg 021172 plain
cg-021196-glasses-smile-teeth.jpg 021196 plain
cg-021300-glasses-smile-teeth-mic.jpg 021300 plain
cg-021502-beard-closed-smile.jpg 021502 plain
cg-021531-grey-hair-closed-smile.jpg 021531 plain
cg-021545x2-hat-glasses-dark-skin.jpg 021545 x2
cg-021711-older-bald-warm-light.jpg 021711 plain
cg-021725-curly-hair-brick-background.jpg 021725 plain
cg-021735-bald-smile-teeth.jpg 021735 plain
cg-021735r-12-roll-12-bald-smile.jpg 021735 r-12
cg-021736-older-dark-skin-glasses-broad-smile.jpg 021736 plain
cg-021741-curly-grey-hair-smile-teeth.jpg 021741 plain
cg-021756-young-smile-teeth-yaw.jpg 021756 plain
cg-021758-stubble-foliage-background.jpg 021758 plain
cg-021928x2-long-dark-hair-closed-smile.jpg 021928 x2
cg-021979-dark-skin-glasses-smile-teeth.jpg 021979 plain
cg-022121-blonde-smile-teeth.jpg 022121 plain
cg-022122-long-hair-smile-teeth.jpg 022122 plain
cg-022122r15-roll-15-smile-teeth.jpg 022122 r15
cg-022158x2-beard-glasses-dark-skin.jpg 022158 x2
cg-029354-dark-skin-round-glasses-closed-mouth.jpg 029354 plain
cg-029534-old-white-hair-glasses-smile.jpg 029534 plain
cg-029911-old-woman-smile-green-background.jpg 029911 plain
cg-039307-glasses-moustache-smile.jpg 039307 plain
hist-001172-yaw-17-glasses-bw-oval.jpg 001172 plain
hist-001243-yaw-16-moustache-bw.jpg 001243 plain
hist-001277-yaw-25-beard-bw.jpg 001277 plain
hist-001347x2-yaw-17-roll-14-sepia.jpg 001347 x2
hist-001499-yaw-16-sepia-soft-light.jpg 001499 plain
hist-005099-laughing-smile-teeth-bw-roll.jpg 005099 plain
hist-009968-laughing-open-smile-bw.jpg 009968 plain
LIST

cp "$here/tests/fixtures/photo/grace_hopper.jpg" "$out/navy-grace-hopper-cap-old-woman.jpg"
fr knn_examples/train/biden/biden2.jpg "$out/wh-biden-2013-official-broad-smile.jpg"
fr obama.jpg "$out/wh-obama-2012-official-smile-teeth.jpg"
fr obama-1080p.jpg "$out/wh-obama-1920x1080-landscape.jpg"
fr biden.jpg "$out/xx-biden-standing-full-body-roll-13.jpg"
fr obama2.jpg "$out/xx-obama-speaking-open-mouth.jpg"
fr knn_examples/test/obama_and_biden.jpg "$tmp/pair.jpg"
"$ff" -nostdin -v error -y -i "$tmp/pair.jpg" -vf crop=560:700:560:250 -q:v 2 \
  "$out/xx-biden-stage-squint-smile-teeth.jpg"
"$ff" -nostdin -v error -y -i "$tmp/pair.jpg" -vf crop=560:700:960:200 -q:v 2 \
  "$out/xx-obama-stage-hard-light-roll-14.jpg"
ls "$out" | wc -l
