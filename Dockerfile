# One image per job, for Dataflow: it is the job's Flex Template launcher image and its workers' SDK container.
# Build from the project root, once per job (docs/cloud.md, "Scheduled runs: a Flex Template"):
#   docker build --build-arg JOB=score -t REGION-docker.pkg.dev/PROJECT/REPO/vlnkit-score:TAG .
# The layers below the last ARG are the same for every job, so the second job's build reuses them.

# Beam's own SDK image, the one configs/dataflow.yaml names: Python 3.11, apache-beam[gcp] 2.77.0, and
# /opt/apache/beam/boot, the worker entry point.
FROM apache/beam_python3.11_sdk:2.77.0

# Google's Flex Template launcher for Python 3.11, taken from its launcher image: with it, this SDK image is
# also a Flex Template image (the launcher runs FLEX_TEMPLATE_PYTHON_PY_FILE, below).
COPY --from=gcr.io/dataflow-templates-base/python311-template-launcher-base:latest /opt/google/dataflow/python_template_launcher /opt/google/dataflow/python_template_launcher

ARG WORKDIR=/template
WORKDIR ${WORKDIR}
COPY . ${WORKDIR}

# The project and its dependencies (the spaCy model package included), installed once here: workers start
# from this image (--sdk_container_image), so neither the launcher (no FLEX_TEMPLATE_PYTHON_SETUP_FILE or
# FLEX_TEMPLATE_PYTHON_REQUIREMENTS_FILE) nor any worker runs pip at launch time.
RUN pip install --no-cache-dir ${WORKDIR} && pip check

# The compiled metric kernels cache their machine code here (a folder every worker process can write).
ENV NUMBA_CACHE_DIR=/opt/numba-cache
RUN mkdir -p /opt/numba-cache && chmod 1777 /opt/numba-cache

# Which job this image launches: one of pipelines/cli.py's JOBS, checked while the image is built.
ARG JOB
RUN python -c "import sys; from pipelines.cli import JOBS; sys.exit(0 if '${JOB}' in JOBS else 'JOB must be one of: ' + ', '.join(JOBS))"
ENV VLNKIT_JOB=${JOB}
ENV FLEX_TEMPLATE_PYTHON_PY_FILE=${WORKDIR}/flex_template/main.py

# The image's entry point stays the SDK worker's, as in Google's sample of one image for both uses; a Flex
# Template launch runs /opt/google/dataflow/python_template_launcher in it.
ENTRYPOINT ["/opt/apache/beam/boot"]
