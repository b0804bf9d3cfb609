"""The arms of a comparison: vanilla PPO, the full method, and the ablations."""

from __future__ import annotations

from typing import Any

import attrs

__all__ = ["Arm", "ARMS"]


@attrs.frozen
class Arm:
    """How one arm differs from vanilla PPO.

    Attributes:
        name: the arm's name in result files.
        crl: whether experience is used at all (False: vanilla PPO).
        wrapper: extra ``ExperienceWrapper`` / ``ExperienceVecEnv`` arguments.
        manager: extra ``ManagerConfig`` fields.
        callback: extra ``CRLCallback`` arguments.
        demonstrations: successful scripted episodes distilled into the bank before
            training (needs a family with a demonstrator; 0: none).
        ingest: extra :func:`~integrations.demos.ingest_demonstrations` arguments.
        bank: extra :class:`~experience_wrappers.BankConfig` fields.
        imitation: :class:`~integrations.sb3.SelfImitationCallback` arguments (None: no
            self-imitation); the run's demonstrations are pinned in its replay.
        rollin: guided roll-in (None: none): ``guide_type`` ("bank", the default: the bank's
            nearest demonstration entry acts; "replay": each demonstration's recorded actions
            replayed open-loop on its own instance, :class:`~experience_wrappers.rollin.ReplayGuide`,
            no bank needed, ``on_demonstrated`` required), ``guide`` (:class:`~experience_wrappers.rollin.BankGuide`
            arguments), ``curriculum`` (:class:`~experience_wrappers.rollin.RollInCurriculum`
            arguments; ``h`` defaults to the longest demonstration), ``on_demonstrated``
            (roll-in episodes start on the demonstrations' instances) and the other
            :class:`~integrations.sb3.rollin_env.GuidedRollInVecEnv` arguments (``rollin_ratio``,
            ``only_guided``: False for an arm without the experience wrapper, whose episodes are
            never drawn guided). Needs demonstrations (and, with the bank guide, a bank).
        group_size: the training envs form groups of this size that replay one task
            instance per episode index, half (the guided ratio rounded per group) guided and
            the rest free, and a guided episode is credited against the free episodes of
            its own instance (paired credit; the wrapper gets ``paired=True``). None: the
            unpaired baseline (the task's recent free episodes).
        question: what the arm answers.
    """

    name: str
    crl: bool = True
    wrapper: dict[str, Any] = attrs.field(factory=dict)
    manager: dict[str, Any] = attrs.field(factory=dict)
    callback: dict[str, Any] = attrs.field(factory=dict)
    demonstrations: int = 0
    ingest: dict[str, Any] = attrs.field(factory=dict)
    bank: dict[str, Any] = attrs.field(factory=dict)
    imitation: dict[str, Any] | None = None
    rollin: dict[str, Any] | None = None
    group_size: int | None = None
    question: str = ""


_ALL = [
    Arm("ppo", crl=False, question="the baseline: same policy network, no experience"),
    Arm("crl", question="the full method with the library's defaults"),
    Arm("crl-static", manager={"train_extractor": False},
        question="does the extractor need to co-evolve (paper: a frozen extractor hurt)?"),
    Arm("crl-all-guided", callback={"guided_ratio": 1.0},
        question="are experience-free episodes needed (paper: all-guided falls behind)?"),
    Arm("crl-mixed-adv", callback={"subgroup_advantages": False},
        question="does per-subgroup advantage normalisation matter (paper: mixing collapsed)?"),
    Arm("crl-random-retrieval", wrapper={"query_mode": "random"},
        question="does retrieval by state and utility matter, or would any entry do?"),
    Arm("crl-utility-mean", bank={"utility_warmup": True},
        question="does retrieval by utility work once an entry's utility is the mean of its few credits "
                 "(warm-up) instead of about n * 1 % of it (the plain EMA)?"),
    Arm("crl-no-experience", callback={"guided_ratio": 0.0},
        question="control: the CRL network, wrapper and callback, but no episode is ever shown experience"),
    Arm("crl-sync", manager={"mode": "sync"}, question="what does the background worker save in wall-clock?"),
    Arm("crl-obs", question="experience reaches the actor through the observation only (as crl)"),
]

#: Behaviour-cloning steps on the demonstrations before training (the peers and the method alike).
PRETRAIN_STEPS = 200

_ALL += [
    # the simple peers (no bank, no extractor, no retrieval)
    Arm("ppo-bc", crl=False, demonstrations=20, imitation={"coef": 0.0, "keep": "none",
                                                           "pretrain_steps": PRETRAIN_STEPS},
        question="peer: behaviour cloning on the demonstrations, then plain PPO"),
    Arm("ppo-kickstart", crl=False, demonstrations=20,
        imitation={"coef": 1.0, "weight": "bc", "keep": "none", "pretrain_steps": PRETRAIN_STEPS},
        question="peer: behaviour cloning, then PPO with the cloning loss on the demonstrations kept on"),
    Arm("ppo-sil", crl=False, imitation={"weight": "sil", "keep": "all"},
        question="peer: PPO + self-imitation from a plain FIFO buffer of the agent's own episodes"),
    # the method: experience reaches the policy's own weights (self-imitation from the successful
    # states kept beside the bank: demonstrations and the agent's own wins) and its input (the
    # observation channel on guided episodes); the extractor and the bank co-evolve as in `crl`
    _METHOD := Arm("crl-sil-obs", demonstrations=20, ingest={"segment_every": 1},
                   imitation={"weight": "sil", "keep": "successful", "pretrain_steps": PRETRAIN_STEPS},
                   question="the method: demonstrations in the bank, the observation channel on guided "
                            "episodes, self-imitation on the policy's own logits from the demonstrated and "
                            "the agent's successful states"),
    attrs.evolve(_METHOD, name="crl-sil-obs-paired", wrapper={"paired": True}, group_size=4,
                 question="the method with paired credit (the paper's groups): the 8 envs form 2 groups of 4 that "
                          "replay one task instance per episode index, guided members credited against the free "
                          "members of their own instance, each entry by the steps it was shown (crl-sil-obs: "
                          "against the last 100 free episodes of other layouts, every entry alike)"),
    attrs.evolve(_METHOD, name="crl-sil-obs-process", manager={"mode": "process"},
                 question="the method with its manager's learner in a process of its own (distillation and "
                          "extractor training off the PPO process; entries written at polls): what the speed "
                          "costs in learning against crl-sil-obs (the default async thread)"),
    attrs.evolve(_METHOD, name="crl-sil-obs-sil2",
                 imitation={"weight": "sil", "keep": "successful", "pretrain_steps": PRETRAIN_STEPS, "n_batches": 2},
                 question="the method with half self-imitation's gradient steps per update (2 batches of 256 "
                          "instead of 4): what its cost buys in learning"),
    _OWN := attrs.evolve(_METHOD, name="crl-sil-own", demonstrations=0,
                         question="the method on the agent's own successes only (no demonstrations)"),
    # does the bank earn its place on the agent's own successes? one change each
    Arm("crl-sil-own-plain", crl=False,
        imitation={"weight": "sil", "keep": "successful", "pretrain_steps": PRETRAIN_STEPS},
        question="ablation of crl-sil-own: bank, extractor, retrieval and observation channel replaced by a "
                 "plain buffer of the agent's own successful episodes (the same self-imitation)"),
    attrs.evolve(_OWN, name="crl-sil-own-random", wrapper={"query_mode": "random"},
                 question="ablation of crl-sil-own: random retrieval for the observation channel"),
    attrs.evolve(_OWN, name="crl-sil-own-no-exp", callback={"guided_ratio": 0.0},
                 question="control of crl-sil-own: its network, wrapper, callback and self-imitation, but no "
                          "episode is ever shown experience (what the CRL side costs without the observation "
                          "channel; crl-sil-own-plain drops the CRL side entirely)"),
    attrs.evolve(_METHOD, name="crl-sil-own-all", demonstrations=0,
                 imitation={"weight": "sil", "keep": "all", "pretrain_steps": PRETRAIN_STEPS},
                 question="the method on the agent's own episodes, all of them kept (SIL's own choice: the "
                          "(R - V)+ weight filters), not only the successful ones"),
    # ablations of the method, one change each
    Arm("crl-sil-plain", crl=False, demonstrations=20,
        imitation={"weight": "sil", "keep": "successful", "pretrain_steps": PRETRAIN_STEPS},
        question="ablation: the bank, extractor, retrieval and observation channel replaced by a plain "
                 "buffer (self-imitation from the demonstrations and own successes only)"),
    attrs.evolve(_METHOD, name="crl-sil-obs-no-sil",
                 imitation={"coef": 0.0, "keep": "none", "pretrain_steps": PRETRAIN_STEPS},
                 question="ablation: no self-imitation after the cloning warm-up"),
    attrs.evolve(_METHOD, name="crl-sil-obs-random", wrapper={"query_mode": "random"},
                 question="ablation: random retrieval for the observation channel"),
    attrs.evolve(_METHOD, name="crl-sil-obs-no-exp", callback={"guided_ratio": 0.0},
                 question="control: the method's network, wrapper, callback and self-imitation, but no "
                          "episode is ever shown experience (isolates the observation channel)"),
    attrs.evolve(_METHOD, name="crl-sil-obs-static", manager={"train_extractor": False},
                 question="ablation: a frozen extractor"),
    # guided roll-in (Jump-Start RL / Backplay): in guided episodes the nearest demonstration entry
    # acts for the first h steps, h shrinking as roll-in success passes the threshold; the ablation
    # without it is crl-sil-obs itself
    _ROLLIN := attrs.evolve(_METHOD, name="crl-sil-obs-rollin",
                            rollin={"on_demonstrated": True, "rollin_ratio": 1.0,
                                    "guide": {"max_distance": 0.5},
                                    "curriculum": {"threshold": 0.5, "window": 8, "shrink_step": 1}},
                            question="the method + guided roll-in: guided episodes start on a demonstrated "
                                     "instance with the bank's nearest demonstration entry acting for the first "
                                     "h steps (h from the longest demonstration, down by 1 each time 8 roll-ins "
                                     "at h succeed >= 50 %); guide-acted steps carry no policy gradient; free "
                                     "episodes and evaluation start from true starts"),
    attrs.evolve(_ROLLIN, name="crl-sil-obs-rollin-any",
                 rollin={**_ROLLIN.rollin, "on_demonstrated": False},  # type: ignore[dict-item]
                 question="ablation: roll-in on whatever instance the env drew (the guide generalising "
                          "across layouts by its nearest neighbours) instead of the demonstrated ones"),
    # is it the bank's retrieval that helps roll-in, or starting from demonstrated layouts with any guide?
    attrs.evolve(_ROLLIN, name="crl-sil-obs-rollin-replay",
                 rollin={**_ROLLIN.rollin, "guide_type": "replay"},  # type: ignore[dict-item]
                 question="ablation: crl-sil-obs-rollin with the bank's retrieval replaced by replaying the "
                          "demonstration's recorded actions open-loop on its own instance (ReplayGuide); the "
                          "bank, observation channel and self-imitation as in crl-sil-obs-rollin"),
    Arm("crl-sil-plain-rollin", crl=False, demonstrations=20,
        imitation={"weight": "sil", "keep": "successful", "pretrain_steps": PRETRAIN_STEPS},
        rollin={**{k: v for k, v in _ROLLIN.rollin.items() if k != "guide"},  # type: ignore[union-attr]
                "guide_type": "replay", "only_guided": False, "rollin_ratio": 0.65},
        question="ablation: no bank at all: crl-sil-plain + roll-in with the replay guide; without the "
                 "experience wrapper no episode is drawn guided, so 65 % of all episodes are rolled in (the "
                 "method's guided ratio runs 0.5 -> 0.8 over training, mean 0.65)"),
]

ARMS: dict[str, Arm] = {a.name: a for a in _ALL}
