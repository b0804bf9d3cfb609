"""``GoalLocator``: where a run succeeds, learned from one of its failed trials' keys and rewards.

Where rewards are dense and say how far the agent is from a place it cannot see (Meta-World's
ML1 with the goal hidden), one failed trial's states and rewards hold where the goal is: with
the reward function known, a least-squares fit places every held-out goal of ML1 reach from one
probe trial (``benchmarks/results/goal-from-rewards.json``). The library does not know the
reward function; this network learns the summary from training runs. Each training pair is a
failed trial, its rows ``(key of the state a reward was received in, reward)``, and the key where
a trial of the same instance succeeded (the end of its newest success or demonstration, in any
run): hindsight labels, no privileged information. A failed trial of an instance not yet solved
waits (the newest ``waiting`` of them) for the instance's first success. An instance is the same
place in every run (:class:`~experience_wrappers.wrappers.ReplayInstances` replays its reset
seed). The network reads the rows relative to the trial's best-reward state and predicts the
success key's offset from it (translation-equivariant, but for that state's own place, one more
input): on probes of ML1 reach it placed held-out goals within the success radius 0.77 of the
time from one straight trial, against 0.15 for the best-reward state and 0.39 for the same
network reading absolute keys (the study above).

:class:`~experience_wrappers.trials.run_best.RunBest` shows its guess, with
``TrialMemory(run_best="located")``, until the run has a success of its own.
"""

from __future__ import annotations

from collections import deque
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from ..validators import check_int, check_real

__all__ = ["GoalLocator"]

#: keys are scaled by this before the network reads them (keys in [-1, 1]: a goal radius of a few hundredths)
KEY_SCALE = 5.0


class _SetNet(nn.Module):
    """Rows ``(key offset, reward)`` -> offset of the success key: per-row MLP, attention and mean pooling."""

    def __init__(self, key_dim: int, hidden: int) -> None:
        super().__init__()
        self.phi = nn.Sequential(nn.Linear(key_dim + 1, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        self.att = nn.Linear(hidden, 1)
        self.rho = nn.Sequential(nn.Linear(2 * hidden + key_dim, hidden), nn.ReLU(), nn.Linear(hidden, key_dim))

    def forward(self, rows: torch.Tensor, mask: torch.Tensor, anchor: torch.Tensor) -> torch.Tensor:
        f = self.phi(rows)
        w = self.att(f).squeeze(-1).masked_fill(~mask, -1e9).softmax(-1)
        mean = (f * mask[..., None]).sum(1) / mask.sum(1, keepdim=True).clamp(min=1)
        return self.rho(torch.cat([(w[..., None] * f).sum(1), mean, anchor * KEY_SCALE], -1))


class GoalLocator:
    """Learns the key where a run succeeds from one failed trial's ``(key, reward)`` rows.

    Args:
        key_dim: width of the keys.
        hidden: the network's width.
        lr: Adam's learning rate.
        batch_size: pairs per update.
        updates_per_pair: updates made for each training pair added (once ``batch_size`` pairs are held).
        capacity: the most recent training pairs kept.
        waiting: the most failed trials of unsolved instances kept until their instance succeeds.
        prefix_every: also learn from one prefix of each trial, of a length drawn from the multiples
            of ``prefix_every`` shorter than the trial (a failed trial's, labelled as the trial; a
            successful trial's, labelled by where it ended), so that the locator can guess from a
            trial still going on (``TrialMemory(relocate_every=...)``). 0 (the default): whole failed
            trials only.
        history: also learn from a trial read together with up to ``history`` earlier failed trials
            of its instance (their rows joined into one set; how many drawn uniformly from those
            kept, none included), so that the locator can guess from all of a run's failed trials
            at once (``TrialMemory(locate_from="all")``, which reads the newest ``history + 1``).
            0 (the default): one trial at a time.
        seed: seed of the network and of its sampling.

    >>> loc = GoalLocator(2, seed=0)
    >>> keys = np.array([[0.0, 0.0], [0.1, 0.0], [0.2, 0.0]], np.float32)
    >>> loc.locate(keys, np.array([0.1, 0.2, 0.3], np.float32)).shape
    (2,)
    """

    def __init__(self, key_dim: int, *, hidden: int = 128, lr: float = 1e-3, batch_size: int = 64,
                 updates_per_pair: int = 8, capacity: int = 4096, waiting: int = 256, prefix_every: int = 0,
                 history: int = 0, seed: int = 0) -> None:
        self.key_dim = check_int("GoalLocator(key_dim=...)", key_dim, minimum=1, numpy=True)
        self.batch_size = check_int("GoalLocator(batch_size=...)", batch_size, minimum=1, numpy=True)
        self.updates_per_pair = check_int("GoalLocator(updates_per_pair=...)", updates_per_pair, minimum=0, numpy=True)
        self.prefix_every = check_int("GoalLocator(prefix_every=...)", prefix_every, minimum=0, numpy=True,
                                      hint=" (0: whole failed trials only)")
        self.history = check_int("GoalLocator(history=...)", history, minimum=0, numpy=True,
                                 hint=" (0: one trial at a time)")
        self._waiting_cap = check_int("GoalLocator(waiting=...)", waiting, minimum=1, numpy=True)
        capacity = check_int("GoalLocator(capacity=...)", capacity, minimum=1, numpy=True)
        hidden = check_int("GoalLocator(hidden=...)", hidden, minimum=1, numpy=True)
        lr = check_real("GoalLocator(lr=...)", lr, minimum=0.0)
        seed = check_int("GoalLocator(seed=...)", seed, minimum=0, numpy=True)
        with torch.random.fork_rng():  # seeded weights, the caller's torch generator left as it was
            torch.manual_seed(seed)
            self.net = _SetNet(self.key_dim, hidden)
        self.opt = torch.optim.Adam(self.net.parameters(), lr=lr)
        self._pairs: deque[tuple[np.ndarray, np.ndarray, np.ndarray]] = deque(maxlen=capacity)
        self._rng = np.random.default_rng(seed)
        self._goals: dict[int, np.ndarray] = {}  # instance -> the key its newest success ended in
        self._waiting: deque[tuple[int, np.ndarray, np.ndarray]] = deque(maxlen=self._waiting_cap)
        #: instance -> its newest ``history`` failed trials (any run's), read together with a new trial
        self._earlier: dict[int, deque[tuple[np.ndarray, np.ndarray]]] = {}
        #: pairs added, updates made, the training loss and, before each pair is trained on, the distance
        #: of the guess from its label in key units (both moving averages of the recent ones)
        self.stats: dict[str, float] = {"locator_pairs": 0.0, "locator_updates": 0.0, "locator_loss": 0.0,
                                        "locator_error": 0.0}
        #: per key dimension, how far the guess lies from its label on pairs not yet trained on (key units, a
        #: moving average like ``locator_error``): the spread of a search around a guess (``TrialMemory(search=...)``)
        self.error_dims = np.zeros(self.key_dim, np.float32)

    @staticmethod
    def _rows(keys: np.ndarray, rewards: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        anchor = keys[int(np.argmax(rewards))]
        rows = np.concatenate([(keys - anchor) * KEY_SCALE, rewards[:, None]], axis=1).astype(np.float32)
        return rows, anchor.astype(np.float32)

    def _batch(self, items: list[tuple[np.ndarray, np.ndarray]]) -> tuple[torch.Tensor, ...]:
        length = max(len(r) for r, _ in items)
        rows = np.zeros((len(items), length, self.key_dim + 1), np.float32)
        mask = np.zeros((len(items), length), bool)
        for j, (r, _) in enumerate(items):
            rows[j, :len(r)], mask[j, :len(r)] = r, True
        anchors = np.stack([a for _, a in items])
        return torch.as_tensor(rows), torch.as_tensor(mask), torch.as_tensor(anchors)

    def locate(self, keys: np.ndarray, rewards: np.ndarray) -> np.ndarray:
        """The key where this trial's run succeeds, as guessed from its rows (``keys`` ``(T, key_dim)``, ``rewards`` ``(T,)``)."""
        item = self._rows(np.asarray(keys, np.float32), np.asarray(rewards, np.float32))
        with torch.no_grad():
            offset = self.net(*self._batch([item]))[0].numpy()
        return item[1] + offset / KEY_SCALE

    def add(self, keys: np.ndarray, rewards: np.ndarray, success_key: np.ndarray, *, learn: bool = True) -> None:
        """A training pair: a failed trial's rows and the key where its instance succeeded; then (``learn``) updates."""
        rows, anchor = self._rows(np.asarray(keys, np.float32), np.asarray(rewards, np.float32))
        target = (np.asarray(success_key, np.float32) - anchor) * KEY_SCALE
        with torch.no_grad():  # the guess before learning from the pair: an error on a pair not trained on
            miss = np.abs(self.net(*self._batch([(rows, anchor)]))[0].numpy() - target) / KEY_SCALE
        error = float(np.linalg.norm(miss))
        first = self.stats["locator_pairs"] == 0
        self.stats["locator_error"] = error if first else self.stats["locator_error"] + 0.02 * (
            error - self.stats["locator_error"])
        self.error_dims = miss.astype(np.float32) if first else self.error_dims + 0.02 * (miss - self.error_dims)
        self._pairs.append((rows, anchor, target))
        self.stats["locator_pairs"] += 1
        if learn and len(self._pairs) >= self.batch_size:
            for _ in range(self.updates_per_pair):
                self._update()

    def solved(self, instance: int, success_key: np.ndarray) -> None:
        """A trial (or demonstration) of ``instance`` succeeded, ending at ``success_key``: the label of
        the instance's failed trials from now on, and of those waiting for it."""
        goal = np.asarray(success_key, np.float32).copy()
        self._goals[int(instance)] = goal
        mine = [w for w in self._waiting if w[0] == int(instance)]
        if mine:
            self._waiting = deque((w for w in self._waiting if w[0] != int(instance)), maxlen=self._waiting.maxlen)
        for _, keys, rewards in mine:
            self.add(keys, rewards, goal)

    def failed(self, instance: int, keys: np.ndarray, rewards: np.ndarray) -> None:
        """A failed trial of ``instance``: a training pair with where the instance succeeded, or, before
        it has, kept waiting for that (and so one of its prefixes, with ``prefix_every``; each read
        together with earlier failed trials of the instance, with ``history``)."""
        goal = self._goals.get(int(instance))
        keys, rewards = np.asarray(keys, np.float32), np.asarray(rewards, np.float32)
        for k, r in self._joined(instance, [(keys, rewards), *self._prefix(keys, rewards)]):
            if goal is None:
                self._waiting.append((int(instance), k, r))
            else:
                self.add(k, r, goal)
        self._remember(instance, keys, rewards)

    def succeeded(self, instance: int, keys: np.ndarray, rewards: np.ndarray) -> None:
        """A successful trial of ``instance`` (its rows, the last key where it ended): :meth:`solved`,
        and with ``prefix_every`` one of its prefixes learnt as a trial that goes on to end there."""
        self.solved(instance, keys[-1])
        for k, r in self._joined(instance, self._prefix(keys, rewards)):
            self.add(k, r, keys[-1])

    def _joined(self, instance: int, items: list[tuple[np.ndarray, np.ndarray]]
                ) -> list[tuple[np.ndarray, np.ndarray]]:
        """Each of ``items`` joined with the newest of ``instance``'s earlier failed trials (``history``:
        how many drawn uniformly from none to all kept; without ``history``, ``items`` as they are)."""
        earlier = list(self._earlier.get(int(instance), ()))
        out = []
        for k, r in items:
            n = int(self._rng.integers(0, len(earlier) + 1)) if earlier else 0
            if n:
                k = np.concatenate([*(e[0] for e in earlier[-n:]), k])
                r = np.concatenate([*(e[1] for e in earlier[-n:]), r])
            out.append((k, r))
        return out

    def _remember(self, instance: int, keys: np.ndarray, rewards: np.ndarray) -> None:
        """Keep a failed trial to be read with the instance's next ones (``history``; the newest
        ``waiting`` instances are kept)."""
        if not self.history:
            return
        if int(instance) not in self._earlier and len(self._earlier) >= self._waiting_cap:
            self._earlier.pop(next(iter(self._earlier)))
        self._earlier.setdefault(int(instance), deque(maxlen=self.history)).append((keys, rewards))

    def _prefix(self, keys: np.ndarray, rewards: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        """One prefix of the trial whose length is a multiple of ``prefix_every`` shorter than it (none: too short)."""
        cuts = len(keys[:-1]) // self.prefix_every if self.prefix_every else 0
        if cuts < 1:
            return []
        n = self.prefix_every * int(self._rng.integers(1, cuts + 1))
        return [(keys[:n], rewards[:n])]

    def _update(self) -> None:
        pick = self._rng.choice(len(self._pairs), self.batch_size, replace=False)
        items = [self._pairs[int(i)] for i in pick]
        rows, mask, anchors = self._batch([(r, a) for r, a, _ in items])
        target = torch.as_tensor(np.stack([t for *_, t in items]))
        loss = ((self.net(rows, mask, anchors) - target) ** 2).sum(-1).mean()
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        self.stats["locator_updates"] += 1
        self.stats["locator_loss"] += 0.05 * (loss.item() - self.stats["locator_loss"])

    def state_dict(self) -> dict[str, Any]:
        """The network's weights."""
        return self.net.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Load weights of a locator of the same key width."""
        self.net.load_state_dict(state)

    def save(self, path: str | Path) -> None:
        """Write the weights to ``path``, with what training goes on from: the optimizer's state, where
        each instance last succeeded (the labels), the figures and the per-dimension error. The training pairs (the newest
        ``capacity``), the failed trials waiting for their instance's first success and those kept to be
        read with later ones (``history``) are not kept: a resumed run gathers them again."""
        instances = sorted(self._goals)
        goal_keys = np.stack([self._goals[i] for i in instances]) if instances else np.zeros((0, self.key_dim))
        torch.save({"key_dim": self.key_dim, "net": self.state_dict(), "opt": self.opt.state_dict(),
                    "instances": torch.as_tensor(instances, dtype=torch.int64),
                    "goal_keys": torch.as_tensor(goal_keys, dtype=torch.float32),
                    "error_dims": torch.as_tensor(self.error_dims, dtype=torch.float32),
                    "stats": {k: float(v) for k, v in self.stats.items()}}, Path(path))

    def load(self, path: str | Path) -> None:
        """Read what :meth:`save` wrote (a file of weights alone, as earlier versions wrote, loads the weights).

        Raises:
            ValueError: they are of another key width.
        """
        saved = torch.load(Path(path), weights_only=True)
        if int(saved["key_dim"]) != self.key_dim:
            raise ValueError(f"the goal locator at {str(path)!r} reads keys {saved['key_dim']} wide, this memory's "
                             f"are {self.key_dim}; build the memory with the key encoder of training")
        self.load_state_dict(saved["net"])
        if "opt" in saved:
            self.opt.load_state_dict(saved["opt"])
            self._goals = {int(i): k.numpy().astype(np.float32)
                           for i, k in zip(saved["instances"].tolist(), saved["goal_keys"], strict=True)}
            self.stats.update(saved["stats"])
        # (older saves: zeros, no search spread until pairs are added)
        self.error_dims = (saved["error_dims"].numpy().astype(np.float32) if "error_dims" in saved
                           else np.zeros(self.key_dim, np.float32))
