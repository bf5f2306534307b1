"""The translator interface: request packing, rate limit, retries, the google backend through the real
client library against a loopback stand-in of Translation v3, and the Parquet cache."""

from __future__ import annotations

import pickle
import random

import grpc
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.translate_standin import TranslateStandin
from vlnkit.paraphrases.cache import CachedTranslator, TranslationCache
from vlnkit.paraphrases.translation import (
    GOOGLE,
    MAX_CODEPOINTS,
    MAX_SEGMENTS,
    OFFLINE_DEMO,
    GoogleConfig,
    GoogleTranslator,
    OfflineDemoTranslator,
    RateLimiter,
    RetryPolicy,
    TranslationJob,
    default_backend,
    demo_round_trip,
    demo_translate,
    estimate_cost_usd,
    make_translator,
    plan_requests,
)

FAST_RETRY = RetryPolicy(max_attempts=4, initial_delay=0.001, max_delay=0.01)


# ----------------------------------------------------------------------------- packing
def simple_plan(texts, max_segments, max_codepoints):
    """Greedy packing written the obvious way: start a new request when the next text would not fit."""
    out, cur = [], []
    for i, t in enumerate(texts):
        if not t.strip() or len(t) > max_codepoints:
            continue
        if cur and (len(cur) + 1 > max_segments or sum(len(texts[j]) for j in cur) + len(t) > max_codepoints):
            out.append(cur)
            cur = []
        cur.append(i)
    return out + ([cur] if cur else [])


@settings(max_examples=200, deadline=None)
@given(
    texts=st.lists(st.text(min_size=0, max_size=40), max_size=60),
    max_segments=st.integers(1, 10),
    max_codepoints=st.integers(1, 80),
)
def test_requests_stay_within_limits_and_cover_every_text_once_in_order(texts, max_segments, max_codepoints):
    requests, rejected = plan_requests(texts, max_segments, max_codepoints)
    flat = [i for r in requests for i in r]
    assert flat == sorted(flat)
    assert sorted(flat + list(rejected)) == list(range(len(texts)))
    for r in requests:
        assert 1 <= len(r) <= max_segments
        assert sum(len(texts[i]) for i in r) <= max_codepoints
    assert requests == simple_plan(texts, max_segments, max_codepoints)


def test_default_limits_are_the_api_limits():
    texts = ["x" * 10] * 2500
    requests, rejected = plan_requests(texts)
    assert [len(r) for r in requests] == [1024, 1024, 452] and not rejected
    big = ["y" * 20_000, "z" * 15_000, "w" * 30_001, "", "   "]
    requests, rejected = plan_requests(big)
    assert requests == [[0], [1]]
    assert set(rejected) == {2, 3, 4} and "30001 codepoints" in rejected[2] and rejected[3] == "empty text"
    assert (MAX_SEGMENTS, MAX_CODEPOINTS) == (1024, 30_000)


# ----------------------------------------------------------------------------- rate limit, retry
class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def test_rate_limiter_holds_the_long_run_rate_even_for_requests_larger_than_the_bucket():
    clock = FakeClock()
    limiter = RateLimiter(per_minute=6000, burst_seconds=1.0, clock=clock, sleep=clock.sleep)  # 100 chars/s
    sent = 0
    for n in [50, 50, 300, 10, 1000, 5, 5]:
        limiter.acquire(n)
        sent += n
    # 100 chars of burst, then 100 per second: the last character cannot go before (sent - 100) / 100 s.
    assert clock.now == pytest.approx((sent - 100) / 100)
    assert RateLimiter(None).acquire(10**9) == 0.0
    with pytest.raises(ValueError):
        RateLimiter(0)


def test_backoff_grows_exponentially_with_jitter_and_is_capped():
    policy = RetryPolicy(initial_delay=1.0, multiplier=2.0, max_delay=10.0)
    rng = random.Random(0)
    for attempt in range(8):
        base = min(10.0, 2.0**attempt)
        delays = [policy.delay(attempt, rng) for _ in range(50)]
        assert all(base / 2 <= d <= base for d in delays)
        assert len(set(delays)) > 1  # jittered


def test_cost_estimate_and_backend_choice():
    assert estimate_cost_usd(1_000_000) == 20.0 and estimate_cost_usd(0) == 0.0
    assert default_backend("my-project") == GOOGLE and default_backend(None) == OFFLINE_DEMO
    assert isinstance(make_translator(OFFLINE_DEMO), OfflineDemoTranslator)
    with pytest.raises(ValueError, match="cloud project"):
        GoogleConfig(project="")
    with pytest.raises(ValueError, match="endpoint"):
        GoogleConfig(project="p", insecure=True)
    with pytest.raises(ValueError):
        GoogleConfig(project="p", max_segments=1025)
    with pytest.raises(ValueError, match="unknown translator"):
        make_translator("deepl")


def test_offline_demo_is_deterministic_and_round_trips_through_a_pivot():
    text = "Walk past the table and turn left. Stop at the door."
    pivot = demo_translate(text, "en", "de")
    assert pivot != text and demo_translate(pivot, "de", "en") == demo_round_trip(text, "de")
    assert demo_round_trip(text, "de") == demo_round_trip(text, "de")
    results = {demo_round_trip(text, lang) for lang in ("ar", "es", "de", "fr", "hi", "it", "pt", "ru", "tr", "zh")}
    assert len(results) > 2
    t = OfflineDemoTranslator()
    out = t.translate([TranslationJob((text, " "), "en", "fr")])[0]
    assert out[0].ok and not out[1].ok and t.stats.failed_segments == 1


# ----------------------------------------------------------------------------- google backend, stand-in
@pytest.fixture(scope="module")
def standin():
    with TranslateStandin() as s:
        yield s


@pytest.fixture
def server(standin):
    standin.reset()
    yield standin
    standin.reset()


def google(server, **kw) -> GoogleTranslator:
    cfg = dict(project="test-project", endpoint=server.endpoint, insecure=True, retry=FAST_RETRY, max_in_flight=4)
    cfg.update(kw)
    return GoogleTranslator(GoogleConfig(**cfg))


TEXTS = tuple(f"Walk past table {i} and turn left into the hallway. Stop near door {i}. " for i in range(60))


def expected(texts, source, target):
    return [demo_translate(t, source, target) for t in texts]


def test_google_backend_batches_within_the_limits_and_returns_every_translation_in_order(server):
    t = google(server, max_segments=7, max_codepoints=500)
    try:
        out = t.translate([TranslationJob(TEXTS, "en", "de"), TranslationJob(TEXTS[:5], "en", "fr")])
    finally:
        t.close()
    assert [o.translation for o in out[0]] == expected(TEXTS, "en", "de")
    assert [o.translation for o in out[1]] == expected(TEXTS[:5], "en", "fr")
    reqs = server.requests
    assert all(len(r.contents) <= 7 and sum(map(len, r.contents)) <= 500 for r in reqs)
    assert all(r.status == "OK" and r.mime_type == "text/plain" for r in reqs)
    assert {r.parent for r in reqs} == {"projects/test-project/locations/global"}
    assert sorted(c for r in reqs if r.target == "de" for c in r.contents) == sorted(TEXTS)
    assert t.stats.requests == len(reqs) and t.stats.characters_sent == sum(len(c) for r in reqs for c in r.contents)


def test_default_batching_sends_1024_segments_per_request(server):
    texts = tuple(f"Turn left at door {i}. " for i in range(2100))
    t = google(server)
    try:
        out = t.translate([TranslationJob(texts, "en", "es")])[0]
    finally:
        t.close()
    assert all(o.ok for o in out)
    assert sorted(len(r.contents) for r in server.requests) == [52, 1024, 1024]


def test_transient_failures_are_retried_and_no_text_is_lost(server):
    for code in (
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        grpc.StatusCode.INTERNAL,
    ):
        server.fail_next(1, code)
    server.fail_next(2, grpc.StatusCode.UNAVAILABLE)
    t = google(server, max_segments=10, retry=RetryPolicy(max_attempts=10, initial_delay=0.001, max_delay=0.01))
    try:
        out = t.translate([TranslationJob(TEXTS, "en", "it")])[0]
    finally:
        t.close()
    assert [o.translation for o in out] == expected(TEXTS, "en", "it")
    failed = [r for r in server.requests if r.status != "OK"]
    assert len(failed) == 6 and t.stats.retries == 6 and t.stats.failed_segments == 0
    assert {r.status for r in failed} == {"UNAVAILABLE", "DEADLINE_EXCEEDED", "RESOURCE_EXHAUSTED", "INTERNAL"}


def test_a_permanently_bad_text_fails_alone_and_the_rest_of_its_batch_is_translated(server):
    server.fail_text(TEXTS[13], grpc.StatusCode.INVALID_ARGUMENT)
    t = google(server, max_segments=16)
    try:
        out = t.translate([TranslationJob(TEXTS, "en", "pt")])[0]
    finally:
        t.close()
    bad = [i for i, o in enumerate(out) if not o.ok]
    assert bad == [13] and "INVALID_ARGUMENT" in out[13].error and "en->pt" in out[13].error
    good = expected(TEXTS, "en", "pt")
    assert all(out[i].translation == good[i] for i in range(len(TEXTS)) if i != 13)
    assert t.stats.failed_segments == 1 and t.stats.retries == 0


def test_retries_give_up_after_max_attempts_and_other_permanent_codes_fail_the_batch(server):
    server.fail_next(4, grpc.StatusCode.UNAVAILABLE)
    t = google(server, max_segments=100, max_in_flight=1)
    try:
        out = t.translate([TranslationJob(TEXTS[:3], "en", "ru")])[0]
        assert all("gave up after 4 attempts" in o.error for o in out)
        server.fail_next(1, grpc.StatusCode.PERMISSION_DENIED)
        out = t.translate([TranslationJob(TEXTS[:3], "en", "ru")])[0]
        assert all(o.error.startswith("en->ru: PERMISSION_DENIED") for o in out)
    finally:
        t.close()
    assert t.stats.failed_segments == 6 and t.stats.retries == 3


def test_html_mode_would_escape_apostrophes_which_is_why_the_backend_sends_plain_text(server):
    from google.cloud import translate_v3

    text = "Walk to the chef's table. "
    t = google(server)
    try:
        (out,) = t.translate([TranslationJob((text,), "en", "fr")])
        html = t.client.translate_text(
            request=translate_v3.TranslateTextRequest(
                parent="projects/p/locations/global", contents=[text], target_language_code="fr"
            )
        )
    finally:
        t.close()
    assert out[0].translation == demo_translate(text, "en", "fr")
    assert "&#39;" in html.translations[0].translated_text


def test_google_translator_pickles_without_its_client(server):
    t = google(server)
    t.translate([TranslationJob(TEXTS[:2], "en", "de")])
    clone = pickle.loads(pickle.dumps(t))
    t.close()
    try:
        assert clone.config == t.config and clone.stats.requests == 0
        assert clone.translate([TranslationJob(TEXTS[:2], "en", "de")])[0][0].ok
    finally:
        clone.close()


def test_rate_limit_is_applied_to_real_requests(server):
    slept = []
    t = GoogleTranslator(
        GoogleConfig(project="p", endpoint=server.endpoint, insecure=True, chars_per_minute=60_000, max_segments=10),
        sleep=slept.append,
    )
    try:
        t.translate([TranslationJob(TEXTS, "en", "de")])
    finally:
        t.close()
    # 1000 chars/s with a one-second burst of 1000; requests reserve their slot in turn, so (the
    # sleeps being fake, no time passes) the last one waits for everything beyond the burst.
    chars = sum(map(len, TEXTS))
    assert max(slept) == pytest.approx((chars - 1000) / 1000, rel=0.05)


# ----------------------------------------------------------------------------- cache
def test_cache_makes_a_rerun_free_and_persists_as_parquet(server, tmp_path):
    path = str(tmp_path / "cache")
    jobs = [TranslationJob(TEXTS[:20] + TEXTS[:5], "en", "de"), TranslationJob(TEXTS[:20], "en", "zh")]

    first = CachedTranslator(google(server, max_segments=8), TranslationCache(path))
    out1 = first.translate(jobs)
    first.cache.flush()
    first.close()
    sent = [c for r in server.requests for c in r.contents]
    assert len(sent) == 40  # duplicates in one call are sent once
    assert first.stats.cache_misses == 40 and first.stats.cache_hits == 0

    server.reset()
    second = CachedTranslator(google(server), TranslationCache(path))
    out2 = second.translate(jobs)
    second.close()
    assert server.requests == [] and out2 == out1
    assert second.stats.cache_hits == 45 and second.stats.requests == 0

    parts = list((tmp_path / "cache").glob("part-*.parquet"))
    table = pq.read_table(parts)
    assert len(parts) == 1 and table.num_rows == 40
    # The key names everything that shapes a translation: backend, model, location and the endpoint used.
    assert set(table.column("backend").to_pylist()) == {
        f"google;model=default;location=global;endpoint={server.endpoint}"
    }


def test_cache_keys_include_backend_and_languages_and_failures_are_not_cached(server, tmp_path):
    path = str(tmp_path / "cache")
    cache = TranslationCache(path)
    offline = CachedTranslator(OfflineDemoTranslator(), cache)
    offline.translate([TranslationJob(TEXTS[:3], "en", "de")])
    server.fail_text(TEXTS[1])
    g = CachedTranslator(google(server), cache)
    try:
        out = g.translate([TranslationJob(TEXTS[:3], "en", "de")])[0]  # another backend: not a hit
        assert g.stats.cache_hits == 0 and not out[1].ok
        server.reset()
        g.translate([TranslationJob(TEXTS[:3], "en", "de"), TranslationJob(TEXTS[:3], "en", "es")])
        assert g.stats.cache_hits == 2 and [len(r.contents) for r in server.requests if r.target == "de"] == [1]
    finally:
        g.close()
    cache.flush()
    reloaded = TranslationCache(path)
    assert len(reloaded) == 3 + 3 + 3
    assert reloaded.get((OFFLINE_DEMO, "en", "de", TEXTS[0])) == demo_translate(TEXTS[0], "en", "de")


def test_cache_parts_from_many_writers_merge_and_compact(tmp_path):
    path = str(tmp_path / "c")
    for n in range(3):
        c = TranslationCache(path)
        c.put(("offline-demo", "en", "de", f"text {n}"), f"t{n}")
        c.flush()
    assert len(list((tmp_path / "c").glob("part-*.parquet"))) == 3
    c = TranslationCache(path)
    assert len(c) == 3 and c.flush() is None
    c.compact()
    assert len(list((tmp_path / "c").glob("part-*.parquet"))) == 1 and len(TranslationCache(path)) == 3


def test_unreadable_cache_part_names_the_file(tmp_path):
    from vlnkit.paraphrases.cache import CacheError

    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "part-broken.parquet").write_bytes(b"not parquet")
    with pytest.raises(CacheError, match="part-broken.parquet"):
        TranslationCache(str(tmp_path / "c"))
