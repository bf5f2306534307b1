"""Batched TranslateText vs one request per sentence, through the real client against the loopback stand-in.

    python -m benchmarks.bench_translation [--dataset=../shared/data/r2r/R2R_train.json] [--languages=de]
        [--latency_ms=0] [--max_in_flight=8]

Both runs round-trip every distinct instruction of the dataset (en -> pivot -> en) with the google
backend (same client, same concurrency, same stand-in, same process); only the packing differs:
up to 1024 segments / 30k codepoints per request, against one segment per request. `--latency_ms`
adds a fixed delay per request inside the stand-in, a stand-in for the network round trip to
Google (the stand-in itself answers in well under a millisecond). The outputs of both runs are
checked to be identical before any time is reported.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from tests.translate_standin import TranslateStandin
from vlnkit.paraphrases.translation import MAX_SEGMENTS, GoogleConfig, GoogleTranslator, TranslationJob

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATASET = ROOT.parent / "shared" / "data" / "r2r" / "R2R_train.json"


def round_trip(server: TranslateStandin, texts: tuple[str, ...], languages, max_segments: int, in_flight: int):
    t = GoogleTranslator(
        GoogleConfig(
            project="bench", endpoint=server.endpoint, insecure=True, max_segments=max_segments, max_in_flight=in_flight
        )
    )
    try:
        t.translate([TranslationJob(texts[:1], "en", languages[0])])  # connect outside the timed part
        t.stats.requests = t.stats.segments_sent = t.stats.characters_sent = 0
        start = time.perf_counter()
        forward = t.translate([TranslationJob(texts, "en", lang) for lang in languages])
        back = t.translate(
            [TranslationJob(tuple(o.translation for o in outs), lang, "en") for lang, outs in zip(languages, forward)]
        )
        wall = time.perf_counter() - start
    finally:
        t.close()
    results = [[o.translation for o in outs] for outs in back]
    assert all(r is not None for outs in results for r in outs), "a translation failed"
    return wall, t.stats, results


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default=str(DEFAULT_DATASET))
    ap.add_argument("--languages", default="de", help="comma-separated pivots (each adds a full round trip)")
    ap.add_argument("--latency_ms", type=float, default=0.0, help="added per request in the stand-in")
    ap.add_argument("--max_in_flight", type=int, default=8)
    args = ap.parse_args(argv)

    records = json.loads(Path(args.dataset).read_text())
    texts = tuple(sorted({t for r in records for t in r["instructions"]}))
    languages = [x for x in args.languages.split(",") if x]
    print(
        f"{args.dataset}: {len(texts):,} distinct instructions, {sum(map(len, texts)):,} characters; "
        f"pivots {','.join(languages)}; {args.latency_ms} ms per request; {args.max_in_flight} in flight"
    )

    with TranslateStandin(latency=args.latency_ms / 1000, max_workers=max(16, args.max_in_flight)) as server:
        batched = round_trip(server, texts, languages, MAX_SEGMENTS, args.max_in_flight)
        single = round_trip(server, texts, languages, 1, args.max_in_flight)
    assert batched[2] == single[2], "batched and per-sentence runs disagree"

    rows = []
    for name, (wall, stats, _) in (
        ("batched (<=1024 segments, <=30k codepoints)", batched),
        ("one request per sentence (baseline)", single),
    ):
        rows.append((name, wall, stats.requests, stats.segments_sent / stats.requests, stats.segments_sent / wall))
    print(f"{'':46s} {'wall s':>8s} {'requests':>9s} {'seg/req':>8s} {'seg/s':>9s}")
    for name, wall, req, spr, sps in rows:
        print(f"{name:46s} {wall:8.2f} {req:9,d} {spr:8.1f} {sps:9,.0f}")
    print(
        f"speed-up (baseline wall / batched wall): {single[0] / batched[0]:.1f}x; "
        f"requests: {single[1].requests / batched[1].requests:.0f}x fewer"
    )


if __name__ == "__main__":
    main()
