# The worker image: `python -m workers` for a toolbox, as an unprivileged user.
#
# The base is pinned to an exact tag so that a rebuild gets the same interpreter; bump it
# deliberately. Dependencies are installed as root into the system site-packages, then the
# process runs as `orch` (uid 10001), which owns only the artifact spool.
FROM python:3.11.10-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

RUN groupadd --system --gid 10001 orch \
 && useradd --system --uid 10001 --gid orch --home-dir /app --shell /usr/sbin/nologin orch

WORKDIR /app
COPY pyproject.toml README.md ./
COPY orchestration ./orchestration
COPY workflows ./workflows
COPY activities ./activities
COPY workers ./workers
RUN pip install ".[postgres,otel]"

# Every worker that may resume a run must see the same spool: mount one volume here.
RUN mkdir -p /data/spool && chown -R orch:orch /data
ENV ORCH_SPOOL_DIR=/data/spool

USER 10001:10001

# Prometheus metrics, when started with --metrics-bind 0.0.0.0:9464.
EXPOSE 9464

ENTRYPOINT ["python", "-m", "workers"]
CMD ["--toolbox", "workers.example_tools:TOOLBOX"]
