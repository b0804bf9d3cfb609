"""A finished episode's credit: which entries guided it, against which baseline, and by how much.

The rules are :mod:`experience_wrappers.credit`'s; here they meet the manager's state (its free
baseline, paired credit, outcome figures), for task scope's episodes (:func:`attribute`) and
run scope's trials (:func:`credit_trial`). A credit changes the bank's utilities here, and
returns the extractor's rewards with the credited entries' fields, which the learner backend
takes into its samples (:mod:`.backend`: inline, on its worker thread, or sent to the learner
process with the episode). The backend runs :func:`attribute` where its mode says.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING

import numpy as np

from ..credit import entry_reward, shown_shares, utility_decay
from .backend import Credit
from .episode import Episode

if TYPE_CHECKING:
    from .manager import ExperienceManager

__all__ = ["CREDITED_FIELDS", "attribute", "credit", "credit_payload", "credit_trial"]

#: the fields of a credited entry that the learner needs (its sample)
CREDITED_FIELDS = ("context", "value", "sample_logp", "task_id")


def attribute(mgr: ExperienceManager, ep: Episode) -> list[Credit]:
    """Credit the entries that guided ``ep`` (rules: :mod:`experience_wrappers.credit`); returns
    the extractor's credits, in order (none until a paired episode's free members are in).

    An episode of a replayed instance (``ep.instance`` with at least one free member) is
    judged by the paired rule (:class:`~experience_wrappers.credit.PairedCredit`: the guided
    outcome minus the mean free outcome of the same instance; the guided episode waits in
    :attr:`ExperienceManager.paired` until those are in); any other guided episode against the task's recent
    free episodes (:class:`~experience_wrappers.credit.FreeBaseline`).
    """
    credits: list[Credit] = []
    outcome = ep.outcome
    if not ep.guided:
        mgr.baseline.add(ep.task_id, outcome)
        with mgr.stats_lock:
            mgr.outcomes.add(outcome, guided=False)
    else:
        with mgr.stats_lock:
            mgr.outcomes.add(outcome, guided=True)
    inst = ep.instance
    if inst is not None and inst.free > 0 and inst.guided > 0:
        payload = credit_payload(ep) if ep.guided else None
        spread = None if ep.success is not None else mgr.baseline.spread(ep.task_id)
        # (an instance of one task: tasks on one bank may replay the same seeds, groups and indices)
        for res in mgr.paired.add((ep.task_id, *inst.key), outcome, guided=ep.guided, members=inst.members, free=inst.free,
                                   payload=payload, free_spread=spread):
            if res.payload is not None:
                ids, shares, success = res.payload  # what credit_payload returned
                credits += credit(mgr, ids, shares, success, res.delta)
        return credits
    if not ep.guided:
        return credits
    delta = mgr.baseline.delta(ep.task_id, outcome, ep.success is not None)
    if delta is None:
        return credits
    return credit(mgr, *credit_payload(ep), delta)


def credit_trial(mgr: ExperienceManager, key: Hashable, success: float, *, guided: bool, members: int, free: int,
                 shown: np.ndarray | None = None) -> list[Credit]:
    """Run scope's credit: one finished trial of a group, paired by ``key`` (its run and trial index).

    A guided trial's delta is its success minus the mean success of its group's free trials of
    the same key (:class:`~experience_wrappers.credit.PairedCredit`, the manager's pairing
    table); every entry it was shown (``shown``, ids in the bank) earns it whole. Their fields
    are taken now, as a run's entries may retire before its free trial ends. Bank utilities are
    left alone (run scope reads by nearness, not utility). Returns the extractor's credits of
    the guided trials this trial resolves (none until their free trials are in).
    """
    payload = None
    if guided and shown is not None and len(shown):
        got = mgr.bank.get(shown)
        fields = {k: got[k] for k in CREDITED_FIELDS}
        if mgr.layout is not None:  # the learner's sample is the entry's vector
            fields["value"] = mgr.layout.vectors(fields["value"])
        payload = (shown, fields)
    credits: list[Credit] = []
    with mgr.stats_lock:
        mgr.outcomes.add(float(success), guided=guided)
    for res in mgr.paired.add(key, float(success), guided=guided, members=members, free=free, payload=payload):
        if res.payload is not None:
            ids, fields = res.payload
            with mgr.stats_lock:
                mgr.outcomes.add_delta(res.delta)
            credits.append((ids, fields, res.delta))
    return credits


def credit_payload(ep: Episode) -> tuple[np.ndarray, np.ndarray | None, bool | None]:
    """The ids of the entries shown in ``ep`` (unique), their shares of its delta, its success."""
    ids = np.asarray(ep.injected_ids, dtype=np.int64)
    shares = shown_shares(ep.shown_steps, ep.length)
    if shares is None:
        return np.unique(ids), None, ep.success
    ids, first = np.unique(ids, return_index=True)
    return ids, shares[first], ep.success


def credit(mgr: ExperienceManager, ids: np.ndarray, shares: np.ndarray | None, success: bool | None,
           delta: float) -> list[Credit]:
    """Credit ``delta`` (times each entry's share) to the entries ``ids``: the bank's utilities now;
    returns the extractor's reward for each entry still in the bank, with its fields."""
    if ids.size == 0:
        return []
    with mgr.stats_lock:
        mgr.outcomes.add_delta(delta)
    decay = utility_decay(mgr.schedule.progress, mgr.config.decay_start, mgr.config.decay_end)
    reward = entry_reward(delta, success, mgr.config.extractor_reward)
    # every entry the whole delta, or (paired credit) its share by the steps it was shown
    found = mgr.bank.update(ids, delta if shares is None else delta * shares, decay)
    ids = ids[found]
    if not ids.size:
        return []
    rewards = reward if shares is None else reward * shares[found]
    entries = mgr.bank.get(ids)
    fields = {k: entries[k] for k in CREDITED_FIELDS}
    if mgr.layout is not None:  # the learner's sample is the entry's vector
        fields["value"] = mgr.layout.vectors(fields["value"])
    return [(ids, fields, rewards)]
