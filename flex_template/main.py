"""The Python file Dataflow's Flex Template launcher runs (FLEX_TEMPLATE_PYTHON_PY_FILE in the Dockerfile):
the image's job (VLNKIT_JOB), on the flags the launcher passes (`pipelines.flex_template.launch`)."""

from pipelines.flex_template import launch

if __name__ == "__main__":
    launch()
