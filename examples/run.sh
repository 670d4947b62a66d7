#!/usr/bin/env bash
# The README's main job: ingest everything in examples/ into the store
# ($EVSTORE_URL, default sqlite:///evstore.db in the current directory), then show it.
# Safe to re-run: identical evidence is stored once and reported as not new.
set -euo pipefail
EX="$(cd "$(dirname "$0")" && pwd)"

echo "== store: ${EVSTORE_URL:-sqlite:///evstore.db}"
evstore init

echo "== generic JSON"
evstore ingest "$EX"/json/*.json

# Contract examples are added below by each contract area.
echo "== templiqx evidence fragments with their source bytes"
bash "$EX"/fragments/ingest.sh

echo "== corpus passage evidence manifest (orbidocs v1) with its rendered content"
evstore ingest --content "$EX"/manifests/rendered-evidence.md "$EX"/manifests/manifest.json

echo "== insonic answer evidence packages (packages before the envelope that cites them)"
evstore ingest "$EX"/packages/*.json
echo "export of the retained package, with its current observations (freshness shown):"
evstore export 7d3e9f10-2a4b-4c6d-8e0f-1a2b3c4d5e6f \
  | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["observations"]["freshness"], indent=1))'

echo "== a run's JSON bundle (evidence context, fragments with sources, manifest, package) as one run record"
RUN=$(evstore --json ingest-bundle "$EX"/bundle | python3 -c 'import json,sys;print(json.load(sys.stdin)["run"]["address"])')
echo "run record: $RUN"
evstore runs
echo "== closure of the run record (each piece verified on read)"
evstore closure "$RUN"
echo "== lineage: what refers to the bundle's source document"
SRC=$(evstore --json find --attr source_id=session-alpha --kind source-document | python3 -c 'import json,sys;print(json.load(sys.stdin)["artifacts"][0]["address"])')
evstore refs --all "$SRC"
echo "== recompute an excerpt from the stored source document"
evstore excerpt "$SRC" --ref 31:31 --ref 33:33 --window 1; echo

echo "== all artifacts"
evstore ls
echo "== check"
evstore check
