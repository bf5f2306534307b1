"""A translation cache entry is served only to a translator with the same backend, model, location and
endpoint: output of a test stand-in or another model never comes back as the real service's."""

from __future__ import annotations

from dataclasses import dataclass

from vlnkit.paraphrases.cache import CachedTranslator, TranslationCache
from vlnkit.paraphrases.translation import GoogleConfig, TranslationJob, TranslationOutcome, Translator


@dataclass
class Stub(Translator):
    """A 'google' translator that answers with its own tag, so where an answer came from is visible."""

    config: GoogleConfig
    tag: str

    def __post_init__(self):
        super().__init__()
        self.name = "google"
        self.calls = 0

    def translate(self, jobs):
        self.calls += 1
        return [[TranslationOutcome(f"{self.tag}:{t}") for t in job.texts] for job in jobs]


def translate(cache_dir: str, **config) -> tuple[str, int]:
    inner = Stub(GoogleConfig(project="p", **config), tag=repr(sorted(config.items())))
    translator = CachedTranslator(inner, TranslationCache(cache_dir))
    answer = translator.translate([TranslationJob(("Walk to the door.",), "en", "de")])[0][0].translation
    translator.cache.flush()
    return answer, inner.calls


def test_entries_of_another_endpoint_model_or_location_are_never_served(tmp_path):
    cache = str(tmp_path / "cache")
    standin, calls = translate(cache, endpoint="localhost:9999", insecure=True)
    assert calls == 1
    real, calls = translate(cache)  # the real service: must not get the stand-in's entry
    assert calls == 1 and real != standin
    assert translate(cache) == (real, 0)  # its own entry is served
    assert translate(cache, endpoint="localhost:9999", insecure=True) == (standin, 0)
    for other in ({"model": "projects/p/locations/global/models/general/nmt"}, {"location": "us-central1"}):
        answer, calls = translate(cache, **other)
        assert calls == 1 and answer not in (real, standin), other
