"""A staged pipeline on Beam's portable job service, its outcome reported as Dataflow reports it.

The staged `pipeline.pb` names the SDK container as its environment; as Dataflow puts its own
workers in place of that container, every environment here becomes an EXTERNAL one on the job's
worker pool (whose boot plays the container's part), and the environment's artifact list (files on
the launcher's disk) is dropped: the workers have the staged copies. The pipeline options are the
ones the launcher sent in its CreateJob request.
"""

from __future__ import annotations

import threading
import time

import grpc
from apache_beam.metrics import monitoring_infos
from apache_beam.portability import common_urns
from apache_beam.portability.api import beam_job_api_pb2, beam_job_api_pb2_grpc, beam_runner_api_pb2, endpoints_pb2
from apache_beam.runners.job import utils as job_utils
from google.cloud import dataflow_v1beta3 as dataflow

STATES = {
    beam_job_api_pb2.JobState.DONE: dataflow.JobState.JOB_STATE_DONE,
    beam_job_api_pb2.JobState.FAILED: dataflow.JobState.JOB_STATE_FAILED,
    beam_job_api_pb2.JobState.CANCELLED: dataflow.JobState.JOB_STATE_CANCELLED,
}


def on_worker_pool(pipeline: beam_runner_api_pb2.Pipeline, pool: str) -> None:
    """Every environment of `pipeline` runs on the worker pool at `pool` (host:port), without artifacts."""
    payload = beam_runner_api_pb2.ExternalPayload(endpoint=endpoints_pb2.ApiServiceDescriptor(url=pool))
    for env in pipeline.components.environments.values():
        env.urn = common_urns.environments.EXTERNAL.urn
        env.payload = payload.SerializeToString()
        del env.dependencies[:]


def _connect(endpoint: str, seconds: float = 60) -> grpc.Channel:
    channel = grpc.insecure_channel(endpoint)
    grpc.channel_ready_future(channel).result(timeout=seconds)
    return channel


def worker_error(text: str) -> str:
    """The worker's own traceback out of the runner's report, as Dataflow's 'Error message from worker'."""
    marker = "Original traceback"
    start = text.rfind("Traceback (most recent call last)", 0, text.find(marker) if marker in text else len(text))
    if marker in text:
        text = text[text.index(marker) :].split("\n", 1)[-1]
    elif start > 0:
        text = text[start:]
    return "Error message from worker: " + text.strip()


def counters(metrics: beam_job_api_pb2.MetricResults) -> list[dataflow.MetricUpdate]:
    """User counters as the service's metric updates (a committed and a tentative value each)."""
    updates = []
    for info in metrics.committed:
        if not monitoring_infos.is_counter(info) or not monitoring_infos.is_user_monitoring_info(info):
            continue
        labels = info.labels
        context = {"namespace": labels.get("NAMESPACE", ""), "step": labels.get("PTRANSFORM", "")}
        value = monitoring_infos.extract_counter_value(info)
        for tentative in ("false", "true"):
            updates.append(
                dataflow.MetricUpdate(
                    name=dataflow.MetricStructuredName(
                        origin="user", name=labels.get("NAME", ""), context={**context, "tentative": tentative}
                    ),
                    scalar=value,
                )
            )
    return updates


def run_on_job_service(run, pipeline_bytes: bytes, options: dict, job_endpoint: str, pool: str) -> None:
    """Run the staged pipeline on the job service at `job_endpoint`; the outcome goes into `run` (a JobRun)."""
    pipeline = beam_runner_api_pb2.Pipeline.FromString(pipeline_bytes)
    on_worker_pool(pipeline, pool)
    struct = job_utils.dict_to_struct({f"beam:option:{k}:v1": v for k, v in options.items() if v is not None})
    channel = _connect(job_endpoint)
    service = beam_job_api_pb2_grpc.JobServiceStub(channel)
    prepared = service.Prepare(
        beam_job_api_pb2.PrepareJobRequest(pipeline=pipeline, pipeline_options=struct, job_name=run.job.name)
    )
    job_id = service.Run(beam_job_api_pb2.RunJobRequest(preparation_id=prepared.preparation_id)).job_id
    errors: list[str] = []

    def read_messages() -> None:
        try:
            for response in service.GetMessageStream(beam_job_api_pb2.JobMessagesRequest(job_id=job_id)):
                m = response.message_response
                if response.HasField("message_response") and m.importance == m.JOB_MESSAGE_ERROR:
                    errors.append(m.message_text)
        except grpc.RpcError:
            pass  # the job service was stopped (a cancelled job)

    reader = threading.Thread(target=read_messages, daemon=True)
    reader.start()
    state = None
    try:
        for response in service.GetStateStream(beam_job_api_pb2.GetJobStateRequest(job_id=job_id)):
            state = response.state
            if state in STATES:
                break
    except grpc.RpcError:
        if not run.cancel_requested.is_set():
            raise
    if run.cancel_requested.is_set():
        return
    reader.join(timeout=10)
    if state == beam_job_api_pb2.JobState.DONE:
        try:
            metrics = service.GetJobMetrics(beam_job_api_pb2.GetJobMetricsRequest(job_id=job_id)).metrics
            with run.lock:
                run.metrics = counters(metrics)
        except grpc.RpcError:
            pass
    if state == beam_job_api_pb2.JobState.FAILED:
        for text in dict.fromkeys(errors or ["the job failed without an error message"]):
            run.say(worker_error(text), dataflow.JobMessageImportance.JOB_MESSAGE_ERROR)
        time.sleep(0.1)
    run.say(f"Job {run.id} ended: {beam_job_api_pb2.JobState.Enum.Name(state)}")
    run.set_state(STATES.get(state, dataflow.JobState.JOB_STATE_FAILED))
    channel.close()
