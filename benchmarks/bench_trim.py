"""Time ``toolmend.trim`` on a 100,000-message agent history against ``json.dumps`` of it.

The history is the one ``bench_core.py`` builds (user turns, parallel tool calls, tool results
of a few hundred to a few thousand characters). ``trim`` reads the whole history once (to find
the tool-call groups) and counts tokens only for what it keeps, so its cost should stay well
under the ``json.dumps`` the SDK does anyway.

Run with plain Python: ``python benchmarks/bench_trim.py`` (``--quick`` for 10,000 messages).
Target: <= 0.5x for every case.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parent.parent / "src"))  # the installed one first
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_core import agent_history, damage, ratio_to_dumps

import toolmend

CASES = {
    "max_tokens=128000": {"max_tokens": 128_000, "keep_first": 2},
    "max_messages=1000": {"max_messages": 1_000, "keep_first": 2},
}
TARGET = 0.5


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10,000 messages, fewer runs")
    args = parser.parse_args()
    size, repeat = (10_000, 5) if args.quick else (100_000, 7)
    valid = agent_history(size)
    broken = damage(valid)
    assert toolmend.check(valid) == [] and toolmend.check(broken) != []
    megabytes = len(json.dumps(valid)) / 1e6
    print(f"{len(valid):,} messages, {megabytes:.0f} MB of JSON; median of {repeat} runs")
    print(f"{'case':<20} {'history':<8} {'kept':>6} {'ratio':>8}   (trim time / json.dumps time)")
    worst = 0.0
    for name, options in CASES.items():
        for label, history in (("valid", valid), ("damaged", broken)):
            kept = toolmend.trim(history, **options)
            assert toolmend.check(kept) == []
            ratio = ratio_to_dumps(
                history,
                lambda history=history, options=options: toolmend.trim(history, **options),
                repeat,
            )
            worst = max(worst, ratio)
            print(f"{name:<20} {label:<8} {len(kept):>6} {ratio:>7.3f}x")
    print(f"target (<= {TARGET}x): {'met' if worst <= TARGET else 'MISSED'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
