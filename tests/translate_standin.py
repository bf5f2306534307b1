"""A local gRPC stand-in of Cloud Translation v3 `TranslationService.TranslateText`, for tests and benchmarks.

It listens on 127.0.0.1 only (an ephemeral port), speaks the real wire protocol (the client
library's own request/response messages), and:
- enforces the API limits (1024 segments, 30k codepoints per request) with INVALID_ARGUMENT;
- "translates" with the offline demo's rules (`vlnkit.paraphrases.translation.demo_translate`), so a run
  against it must give exactly what the offline backend gives;
- escapes HTML entities unless `mime_type="text/plain"`, as the real service does;
- records every request, and fails on demand: the next n calls with a status code
  (`fail_next`), or every request carrying a given text (`fail_text`);
- can add a fixed latency per request (benchmarks).

    with TranslateStandin() as s:
        ... GoogleConfig(project="p", endpoint=s.endpoint, insecure=True) ...
"""

from __future__ import annotations

import threading
import time
from concurrent import futures
from dataclasses import dataclass

import grpc
from google.cloud.translate_v3.types import translation_service as ts

from vlnkit.paraphrases.translation import MAX_CODEPOINTS, MAX_SEGMENTS, demo_translate

METHOD = "/google.cloud.translation.v3.TranslationService/TranslateText"


@dataclass
class Recorded:
    parent: str
    contents: list[str]
    source: str
    target: str
    mime_type: str
    status: str  # "OK" or the status code returned


def _html_escape(text: str) -> str:
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&#39;")
    )


class TranslateStandin:
    def __init__(self, latency: float = 0.0, max_workers: int = 16):
        self.latency = latency
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._next_failures: list[grpc.StatusCode] = []
        self._bad_texts: dict[str, grpc.StatusCode] = {}
        self._server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=max_workers),
            options=[("grpc.max_receive_message_length", -1), ("grpc.max_send_message_length", -1)],
        )
        handler = grpc.unary_unary_rpc_method_handler(
            self._translate_text,
            request_deserializer=ts.TranslateTextRequest.deserialize,
            response_serializer=ts.TranslateTextResponse.serialize,
        )
        self._server.add_generic_rpc_handlers(
            (
                grpc.method_handlers_generic_handler(
                    "google.cloud.translation.v3.TranslationService", {"TranslateText": handler}
                ),
            )
        )
        self.port = self._server.add_insecure_port("127.0.0.1:0")
        self.endpoint = f"127.0.0.1:{self.port}"

    # -------------------------------------------------------------- control
    def start(self) -> TranslateStandin:
        self._server.start()
        return self

    def stop(self) -> None:
        self._server.stop(grace=None).wait()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def fail_next(self, n: int, code: grpc.StatusCode = grpc.StatusCode.UNAVAILABLE) -> None:
        with self._lock:
            self._next_failures += [code] * n

    def fail_text(self, text: str, code: grpc.StatusCode = grpc.StatusCode.INVALID_ARGUMENT) -> None:
        """Every request containing `text` fails with `code`."""
        with self._lock:
            self._bad_texts[text] = code

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self._next_failures.clear()
            self._bad_texts.clear()

    @property
    def ok_requests(self) -> list[Recorded]:
        return [r for r in self.requests if r.status == "OK"]

    # -------------------------------------------------------------- service
    def _translate_text(self, request, context):
        if self.latency:
            time.sleep(self.latency)
        contents = list(request.contents)
        status, detail = None, ""
        with self._lock:
            if self._next_failures:
                status, detail = self._next_failures.pop(0), "injected failure"
            else:
                for text in contents:
                    if text in self._bad_texts:
                        status, detail = self._bad_texts[text], f"injected failure for text {text[:30]!r}"
                        break
            if status is None and len(contents) > MAX_SEGMENTS:
                status, detail = grpc.StatusCode.INVALID_ARGUMENT, f"{len(contents)} segments > {MAX_SEGMENTS}"
            if status is None and sum(map(len, contents)) > MAX_CODEPOINTS:
                status, detail = grpc.StatusCode.INVALID_ARGUMENT, "Text is too long."
            if status is None and not request.target_language_code:
                status, detail = grpc.StatusCode.INVALID_ARGUMENT, "Target language is empty."
            self.requests.append(
                Recorded(
                    request.parent,
                    contents,
                    request.source_language_code,
                    request.target_language_code,
                    request.mime_type,
                    "OK" if status is None else status.name,
                )
            )
        if status is not None:
            context.abort(status, detail)
        html = request.mime_type in ("", "text/html")
        out = []
        for text in contents:
            t = demo_translate(text, request.source_language_code, request.target_language_code)
            out.append(ts.Translation(translated_text=_html_escape(t) if html else t))
        return ts.TranslateTextResponse(translations=out)


# ----------------------------------------------------------------------------- sample data
_SAMPLE_INSTRUCTIONS = [
    [
        "Walk past the table and turn left into the hallway. Stop at the door. ",
        "Go straight through the kitchen and wait near the fridge. ",
        "Exit the bedroom, walk down the stairs and stop at the bottom. ",
    ],
    [
        "Turn right and walk towards the sofa. Wait next to the lamp. ",
        "Enter the bathroom and stop in front of the sink. ",
        "Walk past the table and turn left into the hallway. Stop at the door. ",  # same text as path 0
    ],
    [
        "Continue straight until you reach the room with the piano, then stop. ",
        "Walk through the doorway and turn left. Wait by the window. ",
        "Go up the stairs, turn right and enter the office. ",
    ],
    [
        "Leave the dining room and walk to the end of the hallway. ",
        "Turn around and exit through the door behind you, then wait. ",
        "Walk past the bed and stop near the closet. ",
    ],
]


def sample_records() -> list[dict]:
    """Small R2R-format records with realistic instructions (path ids 10, 11, 12, 13)."""
    return [
        {
            "distance": 7.5,
            "scan": "scanA",
            "path_id": 10 + i,
            "path": [f"v{i}a", f"v{i}b", f"v{i}c"],
            "heading": 1.0,
            "instructions": list(ins),
        }
        for i, ins in enumerate(_SAMPLE_INSTRUCTIONS)
    ]


def sample_r4r_records(records: list[dict]) -> list[dict]:
    """R4R-format records joining (10, 12) and (11, 13), as the R4R generator writes them."""
    out = []
    for a, b in [(records[0], records[2]), (records[1], records[3])]:
        out.append(
            {
                "distance": a["distance"] + b["distance"],
                "scan": a["scan"],
                "path_id": a["path_id"] * 1_000_000 + b["path_id"],
                "path": a["path"] + b["path"][1:],
                "heading": a["heading"],
                "instructions": [x + y for x in a["instructions"] for y in b["instructions"]],
                "first_path_id": a["path_id"],
                "second_path_id": b["path_id"],
            }
        )
    return out
