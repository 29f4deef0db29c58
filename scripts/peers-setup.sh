#!/usr/bin/env bash
# The peers voxmill is measured against, outside the repository (never a dependency of voxmill): in one Python
# virtualenv faster-whisper (CTranslate2 Whisper), piper-tts (Piper's own Python runtime), onnx (for the
# speaker-encoder conversion in scripts/models/), OpenAI's Python SDK with websockets (its realtime client's
# transport, the `openai[realtime]` extra), schemathesis and pyannote.metrics (the DER peer of
# test/accuracy/der-parity.test.ts); in a node_modules beside it OpenAI's npm SDK and ws (the optional peer its
# realtime client `openai/realtime/ws` imports). Both SDKs for test/http/openai-sdk.test.ts and
# test/http/realtime-sdk.test.ts. Pinned; idempotent: a second run with everything present only checks the versions.
#
#   bash scripts/peers-setup.sh        prints the venv's python path on its last line
#
# Environment: VOXMILL_PEERS_DIR (default ~/.cache/voxmill/peers).
set -euo pipefail

dir="${VOXMILL_PEERS_DIR:-$HOME/.cache/voxmill/peers}"
venv="$dir/venv"
python="$venv/bin/python"
pins=(faster-whisper==1.2.1 piper-tts==1.8.0 onnx==1.19.1 numpy==2.2.6 openai==3.57.0 websockets==15.0.1
  schemathesis==4.32.5 pyannote.metrics==4.2.0)
node_pins=(openai@7.57.0 ws@8.23.0)

if [[ ! -x "$python" ]]; then
  mkdir -p "$dir"
  python3 -m venv "$venv"
fi
# pip check of the pins first: with all of them installed this takes about a second and reaches no network.
if ! "$python" - "${pins[@]}" <<'PY' 2>/dev/null; then
import sys
from importlib.metadata import version
for pin in sys.argv[1:]:
    name, want = pin.split("==")
    if version(name) != want:
        sys.exit(1)
PY
  echo "peers: installing ${pins[*]} into $venv" >&2
  "$python" -m pip install --quiet --disable-pip-version-check "${pins[@]}" >&2
fi
# OpenAI's npm SDK and ws, in their own prefix (npm ci of voxmill never sees them).
if ! node - "$dir/node/node_modules" "${node_pins[@]}" <<'JS' 2>/dev/null; then
const [modules, ...pins] = process.argv.slice(2);
for (const pin of pins) {
  const at = pin.lastIndexOf('@');
  const version = require(`${modules}/${pin.slice(0, at)}/package.json`).version;
  if (version !== pin.slice(at + 1)) process.exit(1);
}
JS
  echo "peers: installing ${node_pins[*]} into $dir/node" >&2
  mkdir -p "$dir/node"
  npm install --prefix "$dir/node" --no-audit --no-fund --silent --save-exact "${node_pins[@]}" >&2
fi
echo "$python"
