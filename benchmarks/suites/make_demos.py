"""Write scripted MiniHack demonstrations to a file, for "start from demos" runs.

Run::

    python -m benchmarks.suites.make_demos --env MiniHack-KeyRoom-S5-v0 --episodes 100 --out runs/keyroom_demos.npz

The scripted :class:`~integrations.minihack.MapNavigator` plans over the seen map: it
explores, fetches the key, unlocks the door and walks to the stairs; only successful
episodes are kept (:func:`~integrations.minihack.scripted_demonstrations`). The file holds
the observation keys of :func:`~integrations.minihack.make_minihack_env`'s defaults, so an
env made with the defaults can ingest it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from benchmarks.harness.cli_checks import bad_seeds, check_output_file
from integrations.demos import save_demonstrations
from integrations.minihack import scripted_demonstrations


def main(argv: list[str] | None = None) -> Path:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env", default="MiniHack-KeyRoom-S5-v0")
    p.add_argument("--episodes", type=int, default=100)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=Path("runs/demos.npz"))
    args = p.parse_args(argv)
    if args.episodes <= 0:
        p.error(f"--episodes must be positive, got {args.episodes}")
    seeds_problem = bad_seeds([args.seed])
    if seeds_problem:
        p.error(seeds_problem)
    try:  # before recording: the file written is OUT, with .npz added where it lacks it
        check_output_file(args.out if args.out.suffix == ".npz" else args.out.with_name(args.out.name + ".npz"),
                          "--out")
        demos = scripted_demonstrations(args.env, args.episodes, seed=args.seed)
    except (ValueError, RuntimeError) as exc:  # an env the navigator cannot solve, an unknown id: one line
        p.error(str(exc))
    path = save_demonstrations(args.out, demos)
    lengths = [len(d.actions) for d in demos]
    print(f"wrote {len(demos)} successful demonstrations of {args.env} to {path} "
          f"(length mean {np.mean(lengths):.1f}, max {max(lengths)})")
    return path


if __name__ == "__main__":
    main()
