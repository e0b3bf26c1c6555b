#!/usr/bin/env bash
# Rebuild apache_rocketmq_v2.desc from apache/rocketmq-apis (needs git and `pip install grpcio-tools`):
#   bash protocol/grpc_v2/generate.sh [COMMIT]
# then set PROTO_COMMIT in __init__.py to the commit used.
set -euo pipefail
commit="${1:-3e60073c6dab3430feaec443824802e23ecda681}"
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
git clone -q https://github.com/apache/rocketmq-apis "$work/apis"
git -C "$work/apis" checkout -q "$commit"
include="$(python -c 'import grpc_tools, os; print(os.path.join(os.path.dirname(grpc_tools.__file__), "_proto"))')"
python -m grpc_tools.protoc -I"$work/apis" -I"$include" --include_imports \
    --descriptor_set_out="$here/apache_rocketmq_v2.desc" \
    apache/rocketmq/v2/service.proto apache/rocketmq/v2/definition.proto
echo "wrote $here/apache_rocketmq_v2.desc from rocketmq-apis $commit"
