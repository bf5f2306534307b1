"""Paraphrases by round-trip back-translation: translators (Google v3, offline demo), a persistent
translation cache, the BLEU filter, and the pivots of an instruction in any language (`pivots`)."""

from vlnkit._exports import lazy_exports

__getattr__, __all__ = lazy_exports(
    __name__,
    {
        "translation": ("make_translator", "GoogleConfig", "GoogleTranslator", "OfflineDemoTranslator", "RetryPolicy"),
        "cache": ("TranslationCache", "CachedTranslator", "CacheError"),
        "bleu_filter": ("BleuBounds", "sentence_bleu", "judge", "compose"),
        "pivots": ("pivots_for", "instruction_sources"),
        "schemas": ("PARAPHRASES", "CACHE_SCHEMA"),
    },
)
