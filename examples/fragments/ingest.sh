#!/usr/bin/env bash
# templiqx v1alpha1 evidence fragments: register the source bytes, then ingest an eval output.
# Called by examples/run.sh (store: $EVSTORE_URL). Safe to re-run: nothing new is stored.
#
#   clause-3.txt                 the exact source bytes (UTF-8 with CRLF line ends, 2-, 3- and
#                                4-byte characters); offsets are byte offsets into this file
#   fee-extraction-output.json   an eval output: facts plus an `evidence` array of 4 fragments
#                                (one pinned by content_sha256, one by a revision extension)
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"

# The host's revision checksum for this document revision (its own identifier, 64 hex).
REVISION=d4dfd3fad5456c856258ee789f3b69c938346814d31896c19374b76af230b9d0

evstore ingest-source --document-id EX-DOC-0001 --fragment-id clause-3 \
  --revision-checksum "$REVISION" "$HERE/clause-3.txt"
# The scope of the retrieval that produced this output, bound to every fragment in it.
evstore ingest "$HERE/fee-extraction-output.json" \
  --host-id EX-HOST-001 --tenant-id EX-TENANT-001 --authorization-scope-id EX-AUTH-SCOPE-001
evstore fragments --document-id EX-DOC-0001
# The exact quoted bytes of parties[1] (found by its quote_sha256), read from the source
# version the fragment was verified against.
FRAGMENT=$(evstore find --quote-sha256 93419b0163a94a8710dfe3acaec0b8e1e9512dd1b9e923816f81bce546673acf | cut -d" " -f1)
evstore quote "$FRAGMENT"; echo
