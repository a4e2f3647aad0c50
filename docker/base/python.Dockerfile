# syntax=docker/dockerfile:1
# A stand-in for python:3.11-slim-bookworm where no registry can be pulled from: Debian bookworm's own python3 on
# a root file system made by debootstrap (tools/images.py makes and imports it as DEBIAN_IMAGE). Built by
# `make images` only when the default base cannot be pulled; pass it to the pagemill Dockerfiles as PYTHON_IMAGE.
ARG DEBIAN_IMAGE=localhost/pagemill-debian:bookworm
FROM ${DEBIAN_IMAGE}
ENV LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive \
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt PIP_CERT=/etc/ssl/certs/ca-certificates.crt \
    REQUESTS_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
# `python` and `pip install` outside a venv as in the official image (the Dockerfiles' build stage installs uv so):
# the official image has no EXTERNALLY-MANAGED marker, Debian's python3 has one.
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends python3 python3-venv python3-pip \
      ca-certificates >/dev/null \
 && ln -s /usr/bin/python3 /usr/local/bin/python \
 && rm -f /usr/lib/python3.*/EXTERNALLY-MANAGED \
 && rm -rf /var/lib/apt/lists/*
CMD ["python3"]
