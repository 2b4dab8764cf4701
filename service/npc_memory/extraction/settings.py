"""Settings of extraction: which chat-completions endpoint, which prompt, how jobs retry."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_PROMPT = Path(__file__).with_name("prompt_ko.txt")


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

    @property
    def enabled(self) -> bool:
        """True when an endpoint is configured."""
        return bool(self.url)
