"""The closed loop: is what a push recorded what the registry holds under its tag?

When a pushing job ends, its supervisor asks the fleet's registry about every image the job
pushed: the tag's manifest, with all four kinds accepted, against the digest bake recorded in its
metadata file (`containerimage.digest`, the digest of the kind bake pushed). The answer is one
word per image and for the job:

- `in registry`: the tag is the recorded digest (and, when bake recorded a kind, that kind);
- `not found`: the registry lacks the tag: a push bake called a success failed the loop;
- `moved`: the tag names another manifest (another digest, or another kind) than the job pushed;
- `unchecked`: it could not be asked (not the fleet's registry, auth, no answer ...), and why.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from enum import StrEnum

from msgspec import Struct
from msgspec.structs import replace

from rocmtui.core.registry.client import Lookup, ManifestAnswer
from rocmtui.core.registry.media import kind_word
from rocmtui.core.registry.refs import BadReference, parse_ref, registry_url_for
from rocmtui.core.registry.sync import head_manifest
from rocmtui.core.states import LOOP_SYMBOLS


class LoopState(StrEnum):
    """The closed loop's word for an image, or for a job (its worst image)."""

    IN_REGISTRY = "in registry"
    NOT_FOUND = "not found"
    MOVED = "moved"
    UNCHECKED = "unchecked"


_RANK = {
    LoopState.NOT_FOUND: 0,
    LoopState.MOVED: 1,
    LoopState.UNCHECKED: 2,
    LoopState.IN_REGISTRY: 3,
}


class Pushed(Struct, frozen=True):
    """One image a job pushed: its target, tag, and the digest (and kind) bake recorded."""

    target: str
    tag: str
    digest: str | None
    media_type: str | None = None


class ImageCheck(Struct, frozen=True):
    """The registry's answer for one pushed image."""

    target: str
    tag: str
    state: LoopState
    recorded: str | None
    registry: str | None = None  # the digest the registry holds under the tag
    registry_kind: str | None = None
    reason: str | None = None


class PushCheck(Struct, frozen=True):
    """The closed loop for a whole job: its worst image's word, and every image's answer."""

    state: LoopState
    checked_at: float
    images: tuple[ImageCheck, ...]

    @property
    def reason(self) -> str | None:
        """Why the job's word is what it is (the first image that decided it)."""
        worst = next((i for i in self.images if i.state == self.state), None)
        return worst.reason if worst is not None else None

    def describe(self) -> str:
        """One line: `✓ in registry`, `✗ not found (recorded sha256:…, registry: none)` ..."""
        text = f"{LOOP_SYMBOLS.get(self.state, '?')} {self.state}"
        worst = next((i for i in self.images if i.state == self.state), None)
        if worst is None or self.state == LoopState.IN_REGISTRY:
            return text
        if self.state in (LoopState.NOT_FOUND, LoopState.MOVED):
            return f"{text} (recorded {short(worst.recorded)}, registry {short(worst.registry)})"
        return f"{text}: {worst.reason}" if worst.reason else text


def short(digest: str | None) -> str:
    """`sha256:3c91c0a93d09` (19 characters), or `none`."""
    return digest[:19] if digest else "none"


def judge(image: Pushed, answer: ManifestAnswer) -> ImageCheck:
    """One image's word from the registry's answer for its tag."""
    checked = ImageCheck(image.target, image.tag, LoopState.UNCHECKED, image.digest)
    if answer.state in (Lookup.NOT_FOUND, Lookup.NO_REPOSITORY):
        return replace(checked, state=LoopState.NOT_FOUND, reason=answer.reason)
    if answer.state != Lookup.FOUND:
        return replace(checked, reason=f"{answer.state}: {answer.reason}")
    checked = replace(checked, registry=answer.digest, registry_kind=answer.media_type)
    if image.digest is None:
        return replace(checked, reason="bake recorded no digest")
    if image.media_type and answer.media_type and image.media_type != answer.media_type:
        now, then = kind_word(answer.media_type), kind_word(image.media_type)
        why = f"the tag now holds a {now}; the job pushed a {then}"
        return replace(checked, state=LoopState.MOVED, reason=why)
    if answer.digest != image.digest:
        return replace(checked, state=LoopState.MOVED, reason="the tag names another manifest")
    return replace(checked, state=LoopState.IN_REGISTRY)


def check_pushed(
    images: Iterable[Pushed], registry_url: str, timeout: float = 5.0, now: float | None = None
) -> PushCheck | None:
    """Ask the fleet's registry about every pushed image (sequentially: a job pushes a few);
    None when the job pushed nothing. Never raises."""
    checks: list[ImageCheck] = []
    for image in images:
        try:
            ref = parse_ref(image.tag)
        except BadReference as exc:
            checks.append(
                ImageCheck(
                    image.target, image.tag, LoopState.UNCHECKED, image.digest, reason=str(exc)
                )
            )
            continue
        base = registry_url_for(ref.host, registry_url)
        if base is None:
            why = f"{ref.host} is not the fleet's registry ({registry_url})"
            checks.append(
                ImageCheck(image.target, image.tag, LoopState.UNCHECKED, image.digest, reason=why)
            )
            continue
        checks.append(judge(image, head_manifest(base, ref.repository, ref.tag, timeout)))
    if not checks:
        return None
    state = min((c.state for c in checks), key=lambda s: _RANK[s])
    return PushCheck(state, time.time() if now is None else now, tuple(checks))
