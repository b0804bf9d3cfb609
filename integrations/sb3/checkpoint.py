"""``CRLCheckpointCallback``: SB3's ``CheckpointCallback`` that also saves the bank, extractor and manager."""

from __future__ import annotations

import warnings
from pathlib import Path

from stable_baselines3.common.callbacks import CheckpointCallback

from experience_wrappers.validators import check_int

from .checkpoint_files import experience_dir_of, save_checkpoint
from .discovery import one_manager
from .lifecycle import advantage_normalisation_as_configured

__all__ = ["CRLCheckpointCallback"]


class CRLCheckpointCallback(CheckpointCallback):
    """Every ``save_freq`` calls, save the model zip as SB3 does, and the experience beside it.

    Writes ``{save_path}/{name_prefix}_{steps}_steps.zip`` (with the model's own
    ``normalize_advantage``), ``{name_prefix}_{steps}_steps_experience/`` (bank, extractor,
    manager state), ``{name_prefix}_{steps}_steps_meta.json`` (the algorithm's name: another is refused at
    load) and ``{name_prefix}_{steps}_steps_replay.npz`` (self-imitation's replay, where
    there is one); :func:`~integrations.sb3.load_crl` takes the zip's path and restores all of
    them, and the ``VecNormalize`` statistics SB3 writes with ``save_vecnormalize=True``. Arguments
    are SB3's ``CheckpointCallback``'s. The experience is written first: a checkpoint zip is only
    ever there with its experience beside it (a save that fails or is killed half-way leaves at
    most an experience folder without its zip; a zip of the same name already there is removed
    before, and a checkpoint this callback did not write is said once, as it is replaced: another
    run saving to the same folder and prefix). A training env without experience wrappers, or
    with wrappers on two banks, is refused when ``learn`` starts (``ValueError``).

    >>> cb = CRLCheckpointCallback(save_freq=1000, save_path="runs/checkpoints")
    >>> cb.name_prefix
    'rl_model'
    """

    def __init__(self, save_freq: int, save_path: str, name_prefix: str = "rl_model", save_replay_buffer: bool = False,
                 save_vecnormalize: bool = False, verbose: int = 0) -> None:
        save_freq = check_int("save_freq", save_freq, minimum=1, numpy=True, hint=" (calls between checkpoints)")
        if Path(save_path).exists() and not Path(save_path).is_dir():
            raise ValueError(f"save_path {str(save_path)!r} is a file: the checkpoints need a folder there")
        super().__init__(save_freq, save_path, name_prefix, save_replay_buffer, save_vecnormalize, verbose)
        self._written: set[Path] = set()  # the zips this callback wrote (a later learn may write them again)
        self._warned = False

    def _init_callback(self) -> None:
        # what a checkpoint saves is there from the start, not found missing save_freq steps in
        one_manager(self.training_env, "CRLCheckpointCallback")
        super()._init_callback()

    def _on_step(self) -> bool:
        if self.n_calls % self.save_freq == 0:
            model_zip = Path(self._checkpoint_path(extension="zip"))
            if model_zip.exists() and model_zip not in self._written and not self._warned:
                self._warned = True
                warnings.warn(f"CRLCheckpointCallback replaces {str(model_zip)!r} and the files beside it, which it "
                              "did not write (another run's checkpoints in the same folder with the same name_prefix?); "
                              "give each run its own save_path or name_prefix", UserWarning, stacklevel=2)
            self._written.add(model_zip)
            save_checkpoint(model_zip, self.model, self.training_env)
            if self.verbose >= 2:
                print(f"Saving experience checkpoint to {experience_dir_of(model_zip)}")
            with advantage_normalisation_as_configured(self.model):
                super()._on_step()
        return True
