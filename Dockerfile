# rocketmq-emulator: a RocketMQ name server + broker in one process, with the 5.x clients' gRPC endpoint on 8081
# and the dashboard on 8080 (README "Docker").
#   docker build -t rocketmq-emulator .
#   docker run --rm -p 127.0.0.1:9876:9876 -p 127.0.0.1:10911:10911 -p 127.0.0.1:8081:8081 -p 127.0.0.1:8080:8080 rocketmq-emulator
# The base is a build argument so the image also builds from a local stand-in where no registry is reachable.
ARG BASE_IMAGE=python:3.11-slim

# The builder stage makes the package's wheel with the release's command (python -m build --wheel, README
# "Releases"), compiling the native lane (native/*.c) into it; the image gets the wheel and no compiler. The build
# fails if the wheel came out without the lane (a pure-Python wheel is not abi3).
FROM ${BASE_IMAGE} AS builder
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends gcc libc6-dev python3-dev \
    && rm -rf /var/lib/apt/lists/*
COPY pyproject.toml setup.py README.md /src/
COPY native /src/native
COPY broker /src/broker
COPY cli /src/cli
COPY client /src/client
COPY protocol /src/protocol
COPY spark_tools /src/spark_tools
COPY store /src/store
COPY testing /src/testing
RUN python3 -m venv /opt/build \
    && /opt/build/bin/pip install -q build \
    && /opt/build/bin/python -m build --wheel --outdir /wheels /src \
    && ls /wheels/rocketmq_emulator-*-abi3-*.whl

FROM ${BASE_IMAGE}

LABEL org.opencontainers.image.description="A RocketMQ 4.x name server and broker in one Python process, for tests and local development (with the gRPC endpoint of 5.x clients and the dashboard)" \
      org.opencontainers.image.documentation="docs/user/docker.md"

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# The builder's wheel with the runtime requirements and the extras of the gRPC endpoint, the dashboard and ACL (no
# spark, no test extras), in a venv (Debian's Python refuses system-wide pip).
COPY --from=builder /wheels /wheels
RUN python3 -m venv /opt/venv \
    && /opt/venv/bin/pip install --no-compile "$(ls /wheels/rocketmq_emulator-*.whl)[grpc,dashboard,acl]" \
    && /opt/venv/bin/pip uninstall -q -y pip setuptools wheel \
    && /opt/venv/bin/python -m compileall -q /opt/venv/lib \
    && rm -rf /wheels \
    && useradd --system --uid 10001 --home-dir /data --no-create-home rocketmq \
    && mkdir -p /data /etc/rocketmq-emulator \
    && echo '{}' > /etc/rocketmq-emulator/entities.yaml \
    && chown rocketmq /data

# ROCKETMQ_EMULATOR_ENTITIES: the topics, groups and KV settings declared up front; mount a file over this empty
# one (docs/user/entities.md)
ENV PATH=/opt/venv/bin:$PATH \
    ROCKETMQ_EMULATOR_HOST=0.0.0.0 \
    ROCKETMQ_EMULATOR_STORE_DIR=/data/store \
    ROCKETMQ_EMULATOR_GRPC_PORT=8081 \
    ROCKETMQ_EMULATOR_DASHBOARD_PORT=8080 \
    ROCKETMQ_EMULATOR_ENTITIES=/etc/rocketmq-emulator/entities.yaml

# The store: a fresh anonymous volume per container (ephemeral), or mount a named volume to keep it.
VOLUME /data
# 9876 name server, 10911 broker, 10909 the broker's VIP channel (only Java clients that enable it use it);
# with ROCKETMQ_EMULATOR_BROKERS=N the further brokers listen on 10921, 10931, ... (VIP ports 2 below);
# 8081 the gRPC endpoint of RocketMQ 5.x clients (ROCKETMQ_EMULATOR_GRPC_PORT), 8080 the dashboard
EXPOSE 9876 10911 10909 10921 10919 8081 8080

# The container's own ports: the advertised address may only be reachable from outside the container.
HEALTHCHECK --interval=5s --timeout=5s --start-period=10s --retries=3 \
    CMD rocketmq-emulator health --timeout 2 -n "127.0.0.1:${ROCKETMQ_EMULATOR_NAMESRV_PORT:-9876}" \
        --broker "127.0.0.1:${ROCKETMQ_EMULATOR_BROKER_PORT:-10911}"

USER rocketmq
WORKDIR /data
ENTRYPOINT ["rocketmq-emulator"]
CMD ["serve"]
