#!/usr/bin/env bash
# Validates deploy/compose.yaml, deploy/k8s/ and the Dockerfile without
# Docker or Kubernetes (tests/deploy/check.py says how). Packages come from
# PyPI into target/deploy-venv. Usage: scripts/check-deploy.sh [mediagen binary]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/debug/mediagen}
venv=target/deploy-venv
if ! "$venv/bin/python" -c "import kubernetes_validate, dockerfile_parse, jsonschema" 2>/dev/null; then
  echo "check-deploy: installing kubernetes-validate, dockerfile-parse and jsonschema into $venv" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet kubernetes-validate==1.37.0 dockerfile-parse==2.0.1 jsonschema==4.26.0
fi
wheel=$venv/docker_compose-1.29.2-py2.py3-none-any.whl
if [ ! -f "$wheel" ]; then
  "$venv/bin/pip" download --quiet --no-deps docker-compose==1.29.2 -d "$venv"
fi
echo "8d5589373b35c8d3b1c8c1182c6e4a4ff14bffa3dd0b605fcd08f73c94cef809  $wheel" | sha256sum -c --quiet
"$venv/bin/python" tests/deploy/check.py "$wheel" "$bin"
