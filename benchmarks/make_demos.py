"""Write scripted MiniHack demonstrations to a file, for "start from demos" runs.

Run::

    python -m benchmarks.make_demos --env MiniHack-Room-5x5-v0 --episodes 50 --out runs/room5x5_demos.npz

The scripted :class:`~integrations.minihack.StairsSeeker` walks toward the stairs when they
are in view (random moves otherwise); only successful episodes are kept. The env carries
``chars_crop`` besides the default keys (the script reads it), so an env that ingests the
file must be made with the same ``observation_keys``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from integrations.demos import record_demonstrations, save_demonstrations
from integrations.minihack import StairsSeeker, make_minihack_env

KEYS = ("glyphs_crop", "blstats", "chars_crop")


def main(argv: list[str] | None = None) -> Path:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env", default="MiniHack-Room-5x5-v0")
    p.add_argument("--episodes", type=int, default=50)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=Path("runs/demos.npz"))
    args = p.parse_args(argv)
    env = make_minihack_env(args.env, observation_keys=KEYS, seed=args.seed)
    demos = record_demonstrations(env, StairsSeeker(args.seed), args.episodes, seed=args.seed, only_successful=True)
    path = save_demonstrations(args.out, demos)
    lengths = [len(d.actions) for d in demos]
    print(f"wrote {len(demos)} successful demonstrations of {args.env} to {path} "
          f"(length mean {np.mean(lengths):.1f}, max {max(lengths)})")
    return path


if __name__ == "__main__":
    main()
