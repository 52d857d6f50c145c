"""Experience records and strategy cards (seed 000 "Evolving Memory", seed 001
procedural memory): see :mod:`reckon.experience.service`."""

from reckon.experience.service import (
    OUTCOMES,
    Experience,
    ExperienceHit,
    ExperienceService,
    StrategyCard,
)

__all__ = ["OUTCOMES", "Experience", "ExperienceHit", "ExperienceService", "StrategyCard"]
