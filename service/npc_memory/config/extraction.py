"""The ``[extraction]`` section: which chat-completions endpoint turns dialogues into facts, and how jobs retry."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from npc_memory.errors import ConfigError

DEFAULT_PROMPT = Path(__file__).parent.parent / "extraction" / "prompt_ko.txt"
"""The Korean prompt shipped with the package."""


@dataclass(frozen=True)
class ExtractionSettings:
    """The chat model that turns dialogues into facts, and the job queue's retry rules."""

    url: str = ""
    """Base URL of an OpenAI-compatible API (``…/v1``); empty turns extraction off (ExtractMemories refuses)."""
    model: str = ""
    """The model name sent with each request."""
    api_key: str = ""
    """Bearer key, if the endpoint wants one."""
    timeout_seconds: float = 60.0
    """How long one chat-completions call may take before the attempt counts as failed."""
    prompt_path: Path = DEFAULT_PROMPT
    """The prompt template (``{heroine_id}``, ``{heroines}``, ``{dialogue}``); Korean by default."""
    heroines: tuple[str, ...] = field(default=("letia", "lupames", "roco"))
    """The heroine ids the game knows: a fact about any other heroine is rejected."""
    max_attempts: int = 8
    """Attempts before a job is marked failed."""
    backoff_seconds: float = 2.0
    """The wait after the first failed attempt; it doubles after each further one."""
    backoff_max_seconds: float = 300.0
    """The longest wait between attempts."""
    lease_seconds: float = 120.0
    """How long a taken job is held; a worker killed mid-job leaves it to be taken again after this."""
    poll_seconds: float = 1.0
    """How often an idle worker looks for due jobs."""

    def __post_init__(self) -> None:
        if self.max_attempts < 1 or min(self.timeout_seconds, self.lease_seconds, self.poll_seconds) <= 0:
            raise ConfigError("extraction needs max_attempts >= 1 and positive timeout, lease and poll seconds")
        if self.lease_seconds <= self.timeout_seconds:
            raise ConfigError("extraction lease_seconds must exceed timeout_seconds (a job must outlast its call)")

    @property
    def enabled(self) -> bool:
        """True when an endpoint is configured."""
        return bool(self.url)
