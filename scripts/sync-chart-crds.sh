#!/usr/bin/env bash
# Copies crds/*.yaml (the source of truth for the API) into the Helm chart's crds/, which helm
# installs before the chart's templates. ChartCrdsTest fails while the two differ; run this after
# editing a CRD (with the steps of docs/development.md, "Changing the API").
set -euo pipefail
cd "$(dirname "$0")/.."
dest=helm/sluice/crds
mkdir -p "$dest"
# A CRD removed from crds/ leaves the chart too.
for f in "$dest"/*.yaml; do
  [[ -e "$f" ]] || continue
  [[ -e "crds/$(basename "$f")" ]] || { rm -- "$f"; echo "removed $f"; }
done
for f in crds/*.yaml; do
  if ! cmp -s "$f" "$dest/$(basename "$f")"; then
    cp -- "$f" "$dest/"
    echo "copied $f to $dest/"
  fi
done
