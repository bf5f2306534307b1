"""Machine translation for round-trip paraphrasing: one interface, an offline demo backend, Google v3.

(About 500 lines on purpose: request packing, retries, the rate limit and per-text failure all serve
the one `Translator` contract, and are tested together against the gRPC stand-in.)

Every backend takes *jobs* (a list of texts, a source and a target language) and returns one
`TranslationOutcome` per text: a translation or the reason there is none. Failures are per text, so a
caller can dead-letter exactly what was lost and keep the rest.

Backends
--------
`offline-demo` (`OfflineDemoTranslator`): deterministic word rewrites that imitate a round trip,
  for demos and tests. It is not a translator and is never chosen when a cloud project is named.
`google` (`GoogleTranslator`): `google-cloud-translate` v3 `TranslateText`, `mime_type="text/plain"`
  (HTML mode escapes `'` as `&#39;`). The client library does not retry TranslateText, so this backend
  owns the policy: requests packed within the API limits (1024 segments, 30k codepoints), several in
  flight, exponential backoff with jitter on transient codes, a client-side characters-per-minute
  limit, and permanent failures returned per text (a rejected batch is bisected so one bad text does
  not take 1023 good ones down with it). Credentials come from the standard Google auth chain and are
  never logged; `endpoint` + `insecure` point it at an emulator or a test stand-in.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, fields

from vlnkit.hashing import stable_random

OFFLINE_DEMO = "offline-demo"
GOOGLE = "google"
BACKENDS = (GOOGLE, OFFLINE_DEMO)

# TranslateText limits (cloud.google.com/translate/quotas): per request.
MAX_SEGMENTS = 1024
MAX_CODEPOINTS = 30_000
# Cloud Translation NMT list price, USD per million characters (the first 500k/month are free).
USD_PER_MILLION_CHARS = 20.0

TRANSIENT_CODES = frozenset({"UNAVAILABLE", "DEADLINE_EXCEEDED", "RESOURCE_EXHAUSTED", "INTERNAL"})


@dataclass(frozen=True)
class TranslationJob:
    """Texts to translate from `source` to `target` (language codes such as "en", "de")."""

    texts: tuple[str, ...]
    source: str
    target: str


@dataclass(frozen=True)
class TranslationOutcome:
    """One text's result: `translation`, or `error` saying why there is none."""

    translation: str | None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass
class TranslationStats:
    """What a backend did; summed across workers into the job summary."""

    requests: int = 0  # TranslateText calls made (retries included)
    segments_sent: int = 0
    characters_sent: int = 0  # billed codepoints, retries included
    retries: int = 0
    failed_segments: int = 0
    cache_hits: int = 0
    cache_misses: int = 0

    def as_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def add(self, other: TranslationStats) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def minus(self, other: TranslationStats) -> TranslationStats:
        return TranslationStats(**{f.name: getattr(self, f.name) - getattr(other, f.name) for f in fields(self)})

    def copy(self) -> TranslationStats:
        return TranslationStats(**self.as_dict())


def codepoints(text: str) -> int:
    """Characters as the API counts and bills them (Unicode codepoints)."""
    return len(text)


def estimate_cost_usd(characters: int, usd_per_million: float = USD_PER_MILLION_CHARS) -> float:
    return characters * usd_per_million / 1_000_000


class Translator:
    """The interface: `translate(jobs) -> [[TranslationOutcome per text] per job]`, `name`, `stats`."""

    name: str = "?"

    def __init__(self):
        self.stats = TranslationStats()
        self._stats_lock = threading.Lock()

    def translate(self, jobs: Sequence[TranslationJob]) -> list[list[TranslationOutcome]]:
        raise NotImplementedError

    def _count(self, **increments) -> None:
        with self._stats_lock:
            for k, v in increments.items():
                setattr(self.stats, k, getattr(self.stats, k) + v)

    def close(self) -> None:
        """Release connections and threads (a no-op for backends without any)."""


# ----------------------------------------------------------------------------- offline demo
# Rewrites applied on the way back to English: word -> replacement, chosen per (text, pivot).
_DEMO_REWRITES = {
    "walk": "go",
    "go": "walk",
    "turn": "make a turn",
    "exit": "leave",
    "enter": "go into",
    "stop": "wait",
    "stairs": "staircase",
    "hallway": "corridor",
    "past": "by",
    "until": "till",
    "through": "via",
    "then": "and then",
    "towards": "toward",
    "room": "area",
    "wait": "stop",
    "continue": "keep going",
    "straight": "directly",
    "near": "close to",
    "next": "beside",
    "and": "then",
}
_DEMO_MARK = "\u27e6{}\u27e7 "  # ⟦de⟧ prefix: the "pivot language" text


def _demo_rng(text: str, pivot: str) -> random.Random:
    return stable_random(pivot, text)


def demo_round_trip(text: str, pivot: str) -> str:
    """The offline demo's English 'back-translation' of `text` via `pivot`: deterministic rewrites.

    Per (text, pivot) one of four strengths is drawn: unchanged, a few rewrites, every rewrite,
    or a scramble (word order reversed): copies, near-copies, paraphrases and garbage, so the
    BLEU filter has something to do.
    """
    rng = _demo_rng(text, pivot)
    strength = rng.randrange(4)
    words = text.split()
    if strength == 0 or not words:
        return " ".join(words)
    if strength == 3:
        return " ".join(reversed(words))
    out = []
    for w in words:
        core = w.rstrip(".,;:!?")
        tail = w[len(core) :]
        repl = _DEMO_REWRITES.get(core.lower())
        if repl is not None and (strength == 2 or rng.random() < 0.4):
            if core[:1].isupper():
                repl = repl[:1].upper() + repl[1:]
            out.append(repl + tail)
        else:
            out.append(w)
    return " ".join(out)


def demo_translate(text: str, source: str, target: str) -> str:
    """One leg of the demo: to a pivot adds a ⟦pivot⟧ mark; back to the source language rewrites."""
    prefix = _DEMO_MARK.format(source)
    if text.startswith(prefix):
        return demo_round_trip(text[len(prefix) :], source)
    return _DEMO_MARK.format(target) + text


class OfflineDemoTranslator(Translator):
    """Deterministic, offline, free: NOT a translator. For demos, tests and dry runs only."""

    name = OFFLINE_DEMO

    def translate(self, jobs: Sequence[TranslationJob]) -> list[list[TranslationOutcome]]:
        out = []
        for job in jobs:
            results = []
            for text in job.texts:
                if not text.strip():
                    results.append(TranslationOutcome(None, "empty text"))
                    continue
                results.append(TranslationOutcome(demo_translate(text, job.source, job.target)))
            self._count(
                requests=1 if job.texts else 0,
                segments_sent=len(job.texts),
                characters_sent=sum(map(codepoints, job.texts)),
                failed_segments=sum(not r.ok for r in results),
            )
            out.append(results)
        return out


# ----------------------------------------------------------------------------- batching
def plan_requests(texts: Sequence[str], max_segments: int = MAX_SEGMENTS, max_codepoints: int = MAX_CODEPOINTS):
    """Pack text indices, in order, into requests within the API limits.

    Returns (requests, rejected): `requests` is a list of index lists; `rejected` maps the index of
    every text that can never be sent (empty, or longer than a whole request) to the reason.
    """
    requests: list[list[int]] = []
    rejected: dict[int, str] = {}
    current: list[int] = []
    size = 0
    for i, text in enumerate(texts):
        n = codepoints(text)
        if not text.strip():
            rejected[i] = "empty text"
            continue
        if n > max_codepoints:
            rejected[i] = f"text has {n} codepoints, more than the {max_codepoints} one request may carry"
            continue
        if current and (len(current) >= max_segments or size + n > max_codepoints):
            requests.append(current)
            current, size = [], 0
        current.append(i)
        size += n
    if current:
        requests.append(current)
    return requests, rejected


# ----------------------------------------------------------------------------- rate limit, retry
class RateLimiter:
    """Client-side characters-per-minute limit, shared by every thread of a process.

    A reservation scheme: each request takes its characters from a bucket that refills at
    `per_minute / 60` per second (burst: `burst_seconds` of refill) and waits out any debt, so the
    long-run rate never exceeds the limit even for requests larger than the bucket.
    """

    def __init__(
        self,
        per_minute: float | None,
        burst_seconds: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ):
        if per_minute is not None and not per_minute > 0:
            raise ValueError(f"characters per minute must be > 0, got {per_minute}")
        self.rate = None if per_minute is None else per_minute / 60.0
        self.capacity = None if self.rate is None else self.rate * burst_seconds
        self.clock, self.sleep = clock, sleep
        self.tokens = self.capacity or 0.0
        self.last = clock()
        self.lock = threading.Lock()
        self.waited = 0.0

    def acquire(self, n: int) -> float:
        """Take n characters; sleeps as needed. Returns the seconds waited."""
        if self.rate is None:
            return 0.0
        with self.lock:
            now = self.clock()
            self.tokens = min(self.capacity, self.tokens + (now - self.last) * self.rate)
            self.last = now
            self.tokens -= n
            wait = -self.tokens / self.rate if self.tokens < 0 else 0.0
            self.waited += wait
        if wait > 0:
            self.sleep(wait)
        return wait


_LIMITERS: dict[float, RateLimiter] = {}
_LIMITERS_LOCK = threading.Lock()


def process_rate_limiter(per_minute: float | None) -> RateLimiter:
    """One limiter per rate per process, shared by every translator (and DoFn instance) in it."""
    if per_minute is None:
        return RateLimiter(None)
    with _LIMITERS_LOCK:
        limiter = _LIMITERS.get(per_minute)
        if limiter is None:
            limiter = _LIMITERS[per_minute] = RateLimiter(per_minute)
        return limiter


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with jitter: attempt k (0-based) waits uniform(0.5, 1) * min(max_delay, initial * multiplier**k)."""

    max_attempts: int = 6
    initial_delay: float = 0.5
    multiplier: float = 2.0
    max_delay: float = 30.0

    def __post_init__(self):
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {self.max_attempts}")

    def delay(self, attempt: int, rng: random.Random) -> float:
        base = min(self.max_delay, self.initial_delay * self.multiplier**attempt)
        return base * (0.5 + 0.5 * rng.random())


def status_name(exc: BaseException) -> str | None:
    """The gRPC status name of a google.api_core error ("UNAVAILABLE", ...), or None."""
    code = getattr(exc, "grpc_status_code", None)
    if code is not None:
        return getattr(code, "name", str(code))
    code = getattr(exc, "code", None)
    return getattr(code, "name", None) if code is not None and not callable(code) else None


# ----------------------------------------------------------------------------- google v3
@dataclass(frozen=True)
class GoogleConfig:
    """Everything the google backend needs; picklable, so workers build their own client."""

    project: str
    location: str = "global"
    endpoint: str | None = None  # HOST:PORT of an emulator / stand-in
    insecure: bool = False  # plain gRPC channel and anonymous credentials (emulators, tests)
    model: str | None = None
    max_segments: int = MAX_SEGMENTS
    max_codepoints: int = MAX_CODEPOINTS
    max_in_flight: int = 8
    chars_per_minute: float | None = None
    timeout: float = 60.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    seed: int = 0  # jitter only: never changes outputs

    def __post_init__(self):
        if not self.project:
            raise ValueError("the google backend needs a cloud project (--gcp_project)")
        if not 1 <= self.max_segments <= MAX_SEGMENTS:
            raise ValueError(f"max_segments must be in [1, {MAX_SEGMENTS}], got {self.max_segments}")
        if not 1 <= self.max_codepoints <= MAX_CODEPOINTS:
            raise ValueError(f"max_codepoints must be in [1, {MAX_CODEPOINTS}], got {self.max_codepoints}")
        if self.max_in_flight < 1:
            raise ValueError(f"max_in_flight must be >= 1, got {self.max_in_flight}")
        if self.insecure and not self.endpoint:
            raise ValueError("--translate_insecure needs --translate_endpoint=HOST:PORT")


def make_google_client(config: GoogleConfig):
    """A TranslationServiceClient: default endpoint and auth chain, or a plain channel to an emulator."""
    from google.cloud import translate_v3

    if config.insecure:
        import grpc
        from google.auth.credentials import AnonymousCredentials
        from google.cloud.translate_v3.services.translation_service.transports import TranslationServiceGrpcTransport

        channel = grpc.insecure_channel(
            config.endpoint,
            options=[("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", -1)],
        )
        transport = TranslationServiceGrpcTransport(channel=channel, credentials=AnonymousCredentials())
        return translate_v3.TranslationServiceClient(transport=transport)
    options = {"api_endpoint": config.endpoint} if config.endpoint else None
    return translate_v3.TranslationServiceClient(client_options=options)


class GoogleTranslator(Translator):
    """Cloud Translation v3 with batching, concurrency, retries, a rate limit and per-text failures."""

    name = GOOGLE

    def __init__(self, config: GoogleConfig, client=None, sleep: Callable[[float], None] = time.sleep):
        super().__init__()
        self.config = config
        self._client = client
        self._sleep = sleep
        # The process-wide limiter, unless a test injects its own clock.
        shared = sleep is time.sleep
        self._limiter = (
            process_rate_limiter(config.chars_per_minute)
            if shared
            else RateLimiter(config.chars_per_minute, sleep=sleep)
        )
        self._rng = random.Random(config.seed)
        self._rng_lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None

    @property
    def client(self):
        if self._client is None:
            self._client = make_google_client(self.config)
        return self._client

    @property
    def parent(self) -> str:
        return f"projects/{self.config.project}/locations/{self.config.location}"

    def __getstate__(self):
        return {"config": self.config}

    def __setstate__(self, state):
        self.__init__(state["config"])

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        transport = getattr(self._client, "transport", None)
        if transport is not None:
            transport.close()
        self._client = None

    def translate(self, jobs: Sequence[TranslationJob]) -> list[list[TranslationOutcome]]:
        results: list[list[TranslationOutcome | None]] = [[None] * len(job.texts) for job in jobs]
        tasks = []
        for j, job in enumerate(jobs):
            requests, rejected = plan_requests(job.texts, self.config.max_segments, self.config.max_codepoints)
            for i, reason in rejected.items():
                results[j][i] = TranslationOutcome(None, reason)
            self._count(failed_segments=len(rejected))
            tasks += [(j, idx) for idx in requests]
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.config.max_in_flight, thread_name_prefix="translate")
        futures = [self._pool.submit(self._run_request, jobs[j], idx) for j, idx in tasks]
        for (j, idx), fut in zip(tasks, futures):
            for i, outcome in zip(idx, fut.result()):
                results[j][i] = outcome
        return results  # type: ignore[return-value]

    def _jitter(self, attempt: int) -> float:
        with self._rng_lock:
            return self.config.retry.delay(attempt, self._rng)

    def _call(self, texts: list[str], job: TranslationJob) -> list[str]:
        request = {
            "parent": self.parent,
            "contents": texts,
            "mime_type": "text/plain",
            "source_language_code": job.source,
            "target_language_code": job.target,
        }
        if self.config.model:
            request["model"] = self.config.model
        chars = sum(map(codepoints, texts))
        self._limiter.acquire(chars)
        self._count(requests=1, segments_sent=len(texts), characters_sent=chars)
        response = self.client.translate_text(request=request, retry=None, timeout=self.config.timeout)
        translations = [t.translated_text for t in response.translations]
        if len(translations) != len(texts):
            raise _BadResponse(f"response had {len(translations)} translations for {len(texts)} texts")
        return translations

    def _run_request(self, job: TranslationJob, idx: list[int]) -> list[TranslationOutcome]:
        """One packed request, retried on transient codes; a permanent INVALID_ARGUMENT is bisected."""
        from google.api_core import exceptions as core_exceptions

        texts = [job.texts[i] for i in idx]
        attempt = 0
        while True:
            try:
                return [TranslationOutcome(t) for t in self._call(texts, job)]
            except _BadResponse as exc:
                error = str(exc)
            except core_exceptions.GoogleAPICallError as exc:
                code = status_name(exc) or type(exc).__name__
                if code in TRANSIENT_CODES and attempt + 1 < self.config.retry.max_attempts:
                    self._count(retries=1)
                    self._sleep(self._jitter(attempt))
                    attempt += 1
                    continue
                if code == "INVALID_ARGUMENT" and len(idx) > 1:
                    half = len(idx) // 2
                    return self._run_request(job, idx[:half]) + self._run_request(job, idx[half:])
                error = f"{code}: {getattr(exc, 'message', None) or exc}"
                if code in TRANSIENT_CODES:
                    error += f" (gave up after {attempt + 1} attempts)"
            self._count(failed_segments=len(texts))
            return [TranslationOutcome(None, f"{job.source}->{job.target}: {error}") for _ in texts]


class _BadResponse(Exception):
    pass


def make_translator(backend: str, google: GoogleConfig | None = None) -> Translator:
    if backend == OFFLINE_DEMO:
        return OfflineDemoTranslator()
    if backend == GOOGLE:
        if google is None:
            raise ValueError("the google backend needs a GoogleConfig (at least a project)")
        return GoogleTranslator(google)
    raise ValueError(f"unknown translator {backend!r}; choose one of {BACKENDS}")


def default_backend(gcp_project: str | None) -> str:
    """`google` when a cloud project is named, else the offline demo (never the demo for a cloud run)."""
    return GOOGLE if gcp_project else OFFLINE_DEMO
