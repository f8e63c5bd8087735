"""The registry client against a real registry (docker-registry, the CNCF distribution registry
Zot's API matches) and against what a registry can do wrong: auth, 500, a drip-fed body, pages
of tags, an index where a manifest was expected. Each answer is a state with a reason."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest

from devfleet import DripServer, ServiceHandle
from rocmtui.core.registry.client import Lookup, RegistryClient, challenge_reason
from rocmtui.core.registry.media import (
    DOCKER_LIST,
    DOCKER_MANIFEST,
    OCI_INDEX,
    OCI_MANIFEST,
    parse_config,
    parse_manifest,
    pick_platform,
)
from rocmtui.core.registry.pushcheck import LoopState, Pushed, check_pushed, judge
from rocmtui.core.registry.refs import BadReference, parse_ref, registry_url_for, url_host
from rocmtui.core.registry.sync import head_manifest
from tests.support.registry import StandInRegistry, push_image, push_index


def run(coro_factory: Callable[[RegistryClient], object], base: str, **kw: object) -> object:
    async def go() -> object:
        async with RegistryClient(base, **kw) as client:  # type: ignore[arg-type]
            return await coro_factory(client)  # type: ignore[misc]

    return asyncio.run(go())


def deadline(seconds: float = 10.0) -> float:
    return time.monotonic() + seconds


# ------------------------------------------------------------------ references (pure)


def test_references_parse_and_bad_tags_say_why() -> None:
    ref = parse_ref("127.0.0.1:5000/rocm-bake/pytorch:2.15.0-rocm7.2.2-gfx950")
    assert (ref.host, ref.repository, ref.tag) == (
        "127.0.0.1:5000",
        "rocm-bake/pytorch",
        "2.15.0-rocm7.2.2-gfx950",
    )
    assert parse_ref("rocm/x").host == "docker.io" and parse_ref("rocm/x").tag == "latest"
    for bad, word in (
        ("127.0.0.1:5000/x:2.15.0+local", "tag '2.15.0+local' is not valid"),
        ("127.0.0.1:5000/x:" + "a" * 129, "is not valid for the distribution spec"),
        ("127.0.0.1:5000/Rocm/X:1", "repository 'Rocm/X'"),
        ("127.0.0.1:5000/x@sha256:" + "0" * 64, "names a digest"),
    ):
        with pytest.raises(BadReference, match=word.replace("+", r"\+")):
            parse_ref(bad)
    assert url_host("http://127.0.0.1:5000") == "127.0.0.1:5000"
    assert url_host("https://zot.example:443/") == "zot.example"
    assert registry_url_for("127.0.0.1:5000", "http://127.0.0.1:5000/") == "http://127.0.0.1:5000"
    assert registry_url_for("snoc-strix:8080", "http://127.0.0.1:5000") is None


def test_challenges_are_worded() -> None:
    bearer = (
        'Bearer realm="https://auth.example/token",service="registry",scope="repository:x:pull"'
    )
    assert challenge_reason(401, bearer) == (
        "bearer token required (from auth.example, scope repository:x:pull); rocmtui sends none"
    )
    assert challenge_reason(401, 'Basic realm="r"').startswith("basic credentials required")
    assert challenge_reason(403, None) == "access denied (HTTP 403)"


# ------------------------------------------------------------------ the real registry


@pytest.fixture
def registry(registry_factory: Callable[..., ServiceHandle]) -> ServiceHandle:
    return registry_factory()


@pytest.mark.fleet
def test_head_answers_digest_and_kind_of_each_manifest_kind(registry: ServiceHandle) -> None:
    base = registry.url
    docker = push_image(base, "demo/a", "docker", {"rocm-bake.pin.ROCM_VERSION": "7.2.2"})
    oci = push_image(base, "demo/a", "oci", media_type=OCI_MANIFEST)
    index = push_index(base, "demo/a", "index", [(oci, "linux/amd64")])
    listed = push_index(base, "demo/a", "list", [(docker, "linux/amd64")], media_type=DOCKER_LIST)

    async def heads(client: RegistryClient) -> list[object]:
        return list(
            await asyncio.gather(
                *(
                    client.manifest("demo/a", t, deadline())
                    for t in ("docker", "oci", "index", "list")
                )
            )
        )

    answers = run(heads, base)
    assert [(a.state, a.digest, a.media_type) for a in answers] == [  # type: ignore[attr-defined]
        (Lookup.FOUND, docker.digest, DOCKER_MANIFEST),
        (Lookup.FOUND, oci.digest, OCI_MANIFEST),
        (Lookup.FOUND, index.digest, OCI_INDEX),
        (Lookup.FOUND, listed.digest, DOCKER_LIST),
    ]
    # the same HEAD over the standard library (the supervisor's) answers the same
    sync = head_manifest(base, "demo/a", "docker", 5.0)
    assert (sync.state, sync.digest, sync.media_type) == (
        Lookup.FOUND,
        docker.digest,
        DOCKER_MANIFEST,
    )


@pytest.mark.fleet
def test_an_index_is_read_through_to_the_images_labels(registry: ServiceHandle) -> None:
    base = registry.url
    amd = push_image(
        base, "demo/b", None, {"rocm-bake.arch": "gfx950"}, media_type=OCI_MANIFEST, salt="1"
    )
    arm = push_image(
        base, "demo/b", None, {"x": "arm"}, media_type=OCI_MANIFEST, arch="arm64", salt="2"
    )
    push_index(base, "demo/b", "multi", [(arm, "linux/arm64"), (amd, "linux/amd64")])

    async def labels(client: RegistryClient) -> object:
        top = await client.manifest("demo/b", "multi", deadline(), method="GET")
        assert top.body is not None
        child = pick_platform(parse_manifest(top.body, top.media_type))
        assert child is not None and child.digest == amd.digest
        image = await client.manifest("demo/b", child.digest, deadline(), method="GET")
        assert image.body is not None
        manifest = parse_manifest(image.body, image.media_type)
        assert manifest.config_digest is not None
        return parse_config(await client.blob("demo/b", manifest.config_digest, deadline()))

    config = run(labels, base)
    assert config.labels == {"rocm-bake.arch": "gfx950"}  # type: ignore[attr-defined]
    assert config.platform == "linux/amd64"  # type: ignore[attr-defined]


@pytest.mark.fleet
def test_missing_tag_and_missing_repository_are_told_apart(registry: ServiceHandle) -> None:
    push_image(registry.url, "demo/c", "one")

    async def ask(client: RegistryClient) -> tuple[object, ...]:
        return (
            await client.manifest("demo/c", "two", deadline()),
            await client.manifest("demo/nothing", "one", deadline(), method="GET"),
            await client.tags("demo/nothing", deadline()),
        )

    tag, repo, listing = run(ask, registry.url)  # type: ignore[misc]
    assert tag.state == Lookup.NOT_FOUND
    # the CNCF registry says MANIFEST_UNKNOWN for a repository it lacks too: only the tag
    # list tells the two apart
    assert repo.state == Lookup.NOT_FOUND
    assert listing.state == Lookup.NO_REPOSITORY


def test_tags_are_listed_through_every_page() -> None:
    tags = [f"t{i:02d}" for i in range(25)]
    with StandInRegistry(tags=tags) as server:
        listing = run(lambda c: c.tags("demo/d", deadline(), page=10), server.url)
        assert listing.state == Lookup.FOUND and listing.complete  # type: ignore[attr-defined]
        assert listing.pages == 3  # type: ignore[attr-defined]
        assert list(listing.tags) == tags  # type: ignore[attr-defined]
        assert [p for _, p in server.requests] == [
            "/v2/demo/d/tags/list?n=10",
            "/v2/demo/d/tags/list?n=10&last=t09",
            "/v2/demo/d/tags/list?n=10&last=t19",
        ]
        cut = run(lambda c: c.tags("demo/d", deadline(), page=10, max_pages=2), server.url)
        assert not cut.complete and len(cut.tags) == 20  # type: ignore[attr-defined]


@pytest.mark.fleet
def test_the_real_registry_lists_tags_in_one_answer(registry: ServiceHandle) -> None:
    image = push_image(registry.url, "demo/d", "t00")
    from tests.support.registry import put_manifest

    for i in range(1, 5):
        put_manifest(registry.url, "demo/d", f"t{i:02d}", image.body, image.media_type)
    listing = run(lambda c: c.tags("demo/d", deadline(), page=2), registry.url)
    assert sorted(listing.tags) == [f"t{i:02d}" for i in range(5)]  # type: ignore[attr-defined]


@pytest.mark.fleet
def test_basic_auth_registry_is_an_auth_state(
    registry_factory: Callable[..., ServiceHandle],
) -> None:
    locked = registry_factory(htpasswd=True)
    answer = run(lambda c: c.manifest("demo/e", "x", deadline()), locked.url)
    assert answer.state == Lookup.AUTH  # type: ignore[attr-defined]
    assert "basic credentials required" in answer.reason  # type: ignore[attr-defined]


# ------------------------------------------------------------------ stand-ins and hostile servers


def test_bearer_challenge_and_server_error_are_states() -> None:
    challenge = (
        'Bearer realm="https://auth.example/token",service="zot",scope="repository:demo/e:pull"'
    )
    with StandInRegistry(401, {"WWW-Authenticate": challenge}) as server:
        answer = run(lambda c: c.manifest("demo/e", "x", deadline()), server.url)
        assert answer.state == Lookup.AUTH  # type: ignore[attr-defined]
        assert "bearer token required (from auth.example" in answer.reason  # type: ignore[attr-defined]
    body = b'{"errors":[{"code":"UNKNOWN","message":"boom"}]}'
    with StandInRegistry(500, {"Content-Type": "application/json"}, body) as server:
        answer = run(lambda c: c.manifest("demo/e", "x", deadline(), method="GET"), server.url)
        assert answer.state == Lookup.ERROR  # type: ignore[attr-defined]
        assert answer.reason == "registry answered HTTP 500 UNKNOWN"  # type: ignore[attr-defined]


def test_a_drip_fed_answer_ends_at_the_deadline(drip_server: DripServer) -> None:
    started = time.monotonic()
    answer = run(
        lambda c: c.manifest("demo/f", "x", deadline(), method="GET"), drip_server.url, timeout=1.0
    )
    assert time.monotonic() - started < 3.0
    assert answer.state == Lookup.TIMEOUT  # type: ignore[attr-defined]
    sync = head_manifest(drip_server.url, "demo/f", "x", 1.0)
    assert sync.state in (Lookup.TIMEOUT, Lookup.ERROR, Lookup.UNREACHABLE)


@pytest.mark.fleet
def test_concurrency_is_bounded(registry: ServiceHandle) -> None:
    push_image(registry.url, "demo/g", "x")
    peak = 0

    async def many(client: RegistryClient) -> list[object]:
        nonlocal peak

        async def one() -> object:
            nonlocal peak
            answer = await client.manifest("demo/g", "x", deadline())
            assert client._gate is not None
            peak = max(peak, client.concurrency - client._gate._value)
            return answer

        return list(await asyncio.gather(*(one() for _ in range(40))))

    answers = run(many, registry.url, concurrency=3)
    assert all(a.state == Lookup.FOUND for a in answers)  # type: ignore[attr-defined]
    assert peak <= 3


# ------------------------------------------------------------------ the closed loop


@pytest.mark.fleet
def test_the_loop_says_in_registry_not_found_moved(registry: ServiceHandle) -> None:
    base, host = registry.url, registry.address
    pushed = push_image(base, "demo/h", "v1")
    other = push_image(base, "demo/h", "v2", salt="other")
    images = [
        Pushed("a", f"{host}/demo/h:v1", pushed.digest),
        Pushed("b", f"{host}/demo/h:gone", pushed.digest),
        Pushed("c", f"{host}/demo/h:v2", pushed.digest),
        Pushed("d", "snoc-strix:8080/demo/h:v1", pushed.digest),
    ]
    check = check_pushed(images, base)
    assert check is not None
    assert [c.state for c in check.images] == [
        LoopState.IN_REGISTRY,
        LoopState.NOT_FOUND,
        LoopState.MOVED,
        LoopState.UNCHECKED,
    ]
    assert check.state == LoopState.NOT_FOUND
    assert check.images[2].registry == other.digest
    assert check.describe() == f"✗ not found (recorded {pushed.digest[:19]}, registry none)"
    assert "not the fleet's registry" in str(check.images[3].reason)
    # another kind under the tag than the job recorded is moved, whatever the digest
    from rocmtui.core.registry.client import ManifestAnswer

    kind = judge(
        Pushed("a", "x", pushed.digest, DOCKER_MANIFEST),
        ManifestAnswer(Lookup.FOUND, digest=pushed.digest, media_type=OCI_INDEX),
    )
    assert kind.state == LoopState.MOVED and "OCI index" in str(kind.reason)
