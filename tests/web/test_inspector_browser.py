"""The inspector as a person sees it in a real headless chromium: Korean memories, score bars, refusals, scoping.

The service runs on the test's event loop, so each test drives the (blocking) browser in a thread.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc
from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait
from web_face import ADMIN, ADMIN_KEY, OTHER_KEY, READER_KEY, Face, admin_stub, browser, face, screenshot_folder

__all__ = ["admin_stub", "browser", "face"]  # fixtures used by name

CAT = "레티아는 플레이어가 고양이를 좋아한다는 것을 기억한다"
SEA = "플레이어는 여름에 바다에 가고 싶어 한다"
CHESS = "로코는 플레이어와 체스를 두었다"
SECRET = "다른 플레이어의 비밀: 금고 비밀번호는 4321"
LINE = "다음 주말에 같이 바다 보러 갈래?"


async def _store(stub: svc_grpc.MemoryServiceAsyncStub, user_id: str, heroine_id: str, *contents: str) -> list[str]:
    response = await stub.StoreMemories(svc.StoreMemoriesRequest(
        scope=pb.Scope(user_id=user_id, heroine_id=heroine_id),
        memories=[pb.MemoryInput(content=c, importance=7, subject=pb.SUBJECT_USER, speaker=pb.SPEAKER_USER,
                                 content_type=pb.CONTENT_TYPE_PREFERENCE) for c in contents],
    ), metadata=ADMIN)
    return [r.memory_id for r in response.results]


async def _memory(stub: svc_grpc.MemoryServiceAsyncStub, user_id: str, memory_id: str) -> pb.Memory:
    got = await stub.GetMemory(svc.GetMemoryRequest(scope=pb.Scope(user_id=user_id, heroine_id="letia"),
                                                    memory_id=memory_id), metadata=ADMIN)
    return got.memory


def _sign_in(browser: WebDriver, face: Face, key: str, target: str = "/") -> None:
    browser.delete_all_cookies()
    browser.get(f"{face.base}/login?next={target}")
    browser.find_element(By.ID, "key").send_keys(key)
    browser.find_element(By.ID, "sign-in").click()
    WebDriverWait(browser, 10).until(expected_conditions.presence_of_element_located((By.ID, "who")))


def _wait_for(browser: WebDriver, element_id: str) -> None:
    WebDriverWait(browser, 10).until(expected_conditions.presence_of_element_located((By.ID, element_id)))


@pytest.fixture
def players() -> tuple[str, str]:
    """A player in the reader's namespace and one outside it."""
    tag = uuid.uuid4().hex[:8]
    return f"web-a:p-{tag}", f"web-b:p-{tag}"


async def test_a_player_page_shows_the_stored_korean_memories(
    face: Face, admin_stub: svc_grpc.MemoryServiceAsyncStub, browser: WebDriver, players: tuple[str, str],
    tmp_path: Path,
) -> None:
    """A reader signed in with a key sees the player's heroines and the memories' Korean text, tier and importance."""
    mine, theirs = players
    await _store(admin_stub, mine, "letia", CAT, SEA)
    await _store(admin_stub, mine, "roco", CHESS)
    await _store(admin_stub, theirs, "letia", SECRET)
    said = svc.StoreDialogueRequest(scope=pb.Scope(user_id=mine, heroine_id="letia"))
    said.dialogue.dialogue_id = "first-date"
    said.dialogue.turns.add(speaker=pb.SPEAKER_USER, text=LINE, speaker_name="민수")
    await admin_stub.StoreDialogue(said, metadata=ADMIN)

    def look() -> None:
        _sign_in(browser, face, READER_KEY, f"/players/{mine}")
        assert browser.find_element(By.ID, "player").text == mine
        contents = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#h-letia a.content")]
        assert sorted(contents) == sorted([CAT, SEA, LINE])
        [turn] = [r for r in browser.find_elements(By.CSS_SELECTOR, "#h-letia tr") if LINE in r.text]
        assert "first-date #1" in turn.text
        assert "source" in turn.text
        assert CHESS in browser.find_element(By.ID, "h-roco").text
        assert "preference" in browser.find_element(By.ID, "h-letia").text
        assert SECRET not in browser.page_source
        assert "read-only" in browser.find_element(By.ID, "who").text
        browser.save_screenshot(str(screenshot_folder(tmp_path) / "inspector-player.png"))

    await asyncio.to_thread(look)


async def test_the_front_page_lists_only_players_the_key_may_see(
    face: Face, admin_stub: svc_grpc.MemoryServiceAsyncStub, browser: WebDriver, players: tuple[str, str],
) -> None:
    """The recent players of the front page are those of the key's namespaces: the other player is not there."""
    mine, theirs = players
    await _store(admin_stub, mine, "letia", CAT)
    await _store(admin_stub, theirs, "letia", SECRET)

    def look() -> None:
        _sign_in(browser, face, READER_KEY)
        listed = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#players a")]
        assert mine in listed
        assert theirs not in listed
        assert all(p.startswith("web-a:") for p in listed)

    await asyncio.to_thread(look)


async def test_another_namespace_s_player_page_is_refused(
    face: Face, admin_stub: svc_grpc.MemoryServiceAsyncStub, browser: WebDriver, players: tuple[str, str],
) -> None:
    """A key scoped to web-a gets PERMISSION_DENIED for a web-b player's page, and none of that player's text."""
    _mine, theirs = players
    [memory_id] = await _store(admin_stub, theirs, "letia", SECRET)

    def look() -> None:
        _sign_in(browser, face, READER_KEY, f"/players/{theirs}")
        assert browser.find_element(By.ID, "refused").text == "PERMISSION_DENIED"
        assert SECRET not in browser.page_source
        browser.get(f"{face.base}/players/{theirs}/heroines/letia/memories/{memory_id}")
        assert browser.find_element(By.ID, "refused").text == "PERMISSION_DENIED"
        browser.get(f"{face.base}/players/{theirs}/heroines/letia/search?query=비밀번호")
        assert browser.find_element(By.ID, "refused").text == "PERMISSION_DENIED"
        assert SECRET not in browser.page_source
        _sign_in(browser, face, OTHER_KEY, f"/players/{theirs}")
        assert SECRET in browser.find_element(By.ID, "h-letia").text

    await asyncio.to_thread(look)


async def test_a_page_without_a_key_goes_to_sign_in(face: Face, browser: WebDriver, players: tuple[str, str]) -> None:
    """Without a signed-in key a player's page is the sign-in form; an unknown key is refused there."""
    mine, _theirs = players

    def look() -> None:
        browser.delete_all_cookies()
        browser.get(f"{face.base}/players/{mine}")
        assert browser.find_element(By.ID, "sign-in")
        browser.find_element(By.ID, "key").send_keys("not-a-key")
        browser.find_element(By.ID, "sign-in").click()
        _wait_for(browser, "login-error")
        assert not browser.find_elements(By.ID, "who")

    await asyncio.to_thread(look)


async def test_the_search_playground_draws_four_bars_and_the_final_score(
    face: Face, admin_stub: svc_grpc.MemoryServiceAsyncStub, browser: WebDriver, players: tuple[str, str],
    tmp_path: Path,
) -> None:
    """Each result shows recency, importance, relevance and keyword as bars in [0, 1], and a final score."""
    mine, _theirs = players
    await _store(admin_stub, mine, "letia", CAT, SEA, "플레이어는 매운 음식을 못 먹는다")

    def look() -> None:
        _sign_in(browser, face, READER_KEY, f"/players/{mine}/heroines/letia/search")
        browser.find_element(By.ID, "query").send_keys("고양이")
        browser.find_element(By.ID, "run-search").click()
        WebDriverWait(browser, 10).until(
            expected_conditions.presence_of_element_located((By.CSS_SELECTOR, ".result")))
        results = browser.find_elements(By.CSS_SELECTOR, ".result")
        assert results[0].find_element(By.CSS_SELECTOR, "a.content").text == CAT
        for result in results:
            bars = result.find_elements(By.CSS_SELECTOR, ".bar")
            assert [b.get_attribute("class") for b in bars] == [
                "bar recency", "bar importance", "bar relevance", "bar keyword", "bar final"]
            scores = [float(b.get_attribute("data-score") or "nan") for b in bars[:4]]
            assert all(0.0 <= s <= 1.0 for s in scores)
            full = bars[0].size["width"]
            for bar, score in zip(bars[:4], scores, strict=True):
                assert abs(bar.find_element(By.TAG_NAME, "span").size["width"] - score * full) <= 2
        top_keyword = float(results[0].find_elements(By.CSS_SELECTOR, ".bar")[3].get_attribute("data-score") or 0)
        assert top_keyword > 0  # 고양이 matches 고양이를 through the Korean morphemes
        finals = [float(r.find_element(By.CSS_SELECTOR, ".final-score").text) for r in results]
        assert finals == sorted(finals, reverse=True)
        browser.save_screenshot(str(screenshot_folder(tmp_path) / "inspector-search.png"))

    await asyncio.to_thread(look)


async def test_a_read_only_key_s_edit_is_refused_and_changes_nothing(
    face: Face, admin_stub: svc_grpc.MemoryServiceAsyncStub, browser: WebDriver, players: tuple[str, str],
) -> None:
    """A reader sees no edit forms; a hand-made confirmed invalidate POST answers 403 and the memory stays valid."""
    mine, _theirs = players
    [memory_id] = await _store(admin_stub, mine, "letia", CAT)
    path = f"/players/{mine}/heroines/letia/memories/{memory_id}"

    def look() -> None:
        _sign_in(browser, face, READER_KEY, path)
        assert browser.find_element(By.ID, "memory-content").text == CAT
        assert not browser.find_elements(By.ID, "invalidate")
        browser.execute_script(
            "const f = document.createElement('form'); f.method = 'post'; f.action = arguments[0];"
            "const i = document.createElement('input'); i.name = 'confirmed'; i.value = 'yes'; f.appendChild(i);"
            "document.body.appendChild(f); f.submit();", path + "/invalidate")
        _wait_for(browser, "refused")
        assert browser.find_element(By.ID, "refused").text == "PERMISSION_DENIED"
        assert "read-only" in browser.find_element(By.ID, "refused-message").text

    await asyncio.to_thread(look)
    assert not (await _memory(admin_stub, mine, memory_id)).HasField("invalid_at")


async def test_an_admin_edit_asks_to_confirm_then_changes_the_memory(
    face: Face, admin_stub: svc_grpc.MemoryServiceAsyncStub, browser: WebDriver, players: tuple[str, str],
) -> None:
    """Dismissing the confirm dialog changes nothing; accepting it updates the importance through the service."""
    mine, _theirs = players
    [memory_id] = await _store(admin_stub, mine, "letia", SEA)

    def look() -> None:
        _sign_in(browser, face, ADMIN_KEY, f"/players/{mine}/heroines/letia/memories/{memory_id}")
        field = browser.find_element(By.ID, "new-importance")
        field.clear()
        field.send_keys("9")
        browser.find_element(By.CSS_SELECTOR, "#edit-importance button").click()
        WebDriverWait(browser, 5).until(expected_conditions.alert_is_present())
        browser.switch_to.alert.dismiss()
        assert browser.find_element(By.ID, "importance").text == "7"
        browser.find_element(By.CSS_SELECTOR, "#edit-importance button").click()
        WebDriverWait(browser, 5).until(expected_conditions.alert_is_present())
        browser.switch_to.alert.accept()
        WebDriverWait(browser, 10).until(
            expected_conditions.text_to_be_present_in_element((By.ID, "importance"), "9"))

    await asyncio.to_thread(look)
    assert (await _memory(admin_stub, mine, memory_id)).importance == 9


async def test_the_context_preview_shows_the_block_and_its_token_count(
    face: Face, admin_stub: svc_grpc.MemoryServiceAsyncStub, browser: WebDriver, players: tuple[str, str],
    tmp_path: Path,
) -> None:
    """BuildContext's block appears as the prompt sees it, with a token count within the budget."""
    mine, _theirs = players
    await _store(admin_stub, mine, "letia", CAT, SEA)

    def look() -> None:
        _sign_in(browser, face, READER_KEY, f"/players/{mine}/heroines/letia/context")
        browser.find_element(By.ID, "utterance").send_keys("고양이 얘기 기억나?")
        budget = browser.find_element(By.ID, "budget")
        budget.clear()
        budget.send_keys("120")
        browser.find_element(By.ID, "build").click()
        _wait_for(browser, "context-block")
        block = browser.find_element(By.ID, "context-block").text
        assert CAT in block
        assert 0 < int(browser.find_element(By.ID, "tokens").text) <= 120
        browser.save_screenshot(str(screenshot_folder(tmp_path) / "inspector-context.png"))

    await asyncio.to_thread(look)


async def test_save_points_and_links_are_drawn(
    face: Face, admin_stub: svc_grpc.MemoryServiceAsyncStub, browser: WebDriver, players: tuple[str, str],
    tmp_path: Path,
) -> None:
    """Save points and timelines are marks on the player's line; a memory's linked memories are graph nodes."""
    mine, _theirs = players
    [cat] = await _store(admin_stub, mine, "letia", CAT)
    await admin_stub.CreateSavePoint(svc.CreateSavePointRequest(user_id=mine, save_id="slot-1"), metadata=ADMIN)
    await admin_stub.LoadSavePoint(svc.LoadSavePointRequest(user_id=mine, save_id="slot-1"), metadata=ADMIN)
    linked = await admin_stub.StoreMemories(svc.StoreMemoriesRequest(
        scope=pb.Scope(user_id=mine, heroine_id="letia"), memories=[pb.MemoryInput(
            content="레티아는 고양이 카페에 가자고 했다", importance=6, subject=pb.SUBJECT_USER,
            speaker=pb.SPEAKER_HEROINE, related=[pb.MemoryRef(memory_id=cat)])]), metadata=ADMIN)
    other = linked.results[0].memory_id

    def look() -> None:
        _sign_in(browser, face, READER_KEY, f"/players/{mine}")
        saves = browser.find_element(By.ID, "saves")
        assert len(saves.find_elements(By.CSS_SELECTOR, "circle.save")) == 1
        assert len(saves.find_elements(By.CSS_SELECTOR, "circle.timeline")) == 1
        assert "slot-1" in saves.text
        browser.save_screenshot(str(screenshot_folder(tmp_path) / "inspector-saves.png"))
        browser.get(f"{face.base}/players/{mine}/heroines/letia/memories/{cat}")
        graph = browser.find_element(By.ID, "links")
        nodes = graph.find_elements(By.CSS_SELECTOR, "a")
        assert [(n.get_dom_attribute("href") or "").rsplit("/", 1)[-1] for n in nodes] == [other]
        assert "고양이 카페" in graph.text
        browser.set_window_size(1280, 1300)  # the whole page, graph included, in the guide's picture
        browser.save_screenshot(str(screenshot_folder(tmp_path) / "inspector-memory.png"))
        browser.set_window_size(1280, 1000)

    await asyncio.to_thread(look)


async def test_an_admin_invalidates_and_forgets_after_confirming(
    face: Face, admin_stub: svc_grpc.MemoryServiceAsyncStub, browser: WebDriver, players: tuple[str, str],
) -> None:
    """Invalidate closes the memory (it shows closed); forget erases the player across heroines, both confirmed."""
    mine, _theirs = players
    [memory_id] = await _store(admin_stub, mine, "letia", CAT)
    await _store(admin_stub, mine, "roco", CHESS)

    def look() -> None:
        _sign_in(browser, face, ADMIN_KEY, f"/players/{mine}/heroines/letia/memories/{memory_id}")
        browser.find_element(By.CSS_SELECTOR, "#invalidate button").click()
        WebDriverWait(browser, 5).until(expected_conditions.alert_is_present())
        browser.switch_to.alert.accept()
        WebDriverWait(browser, 10).until(
            expected_conditions.text_to_be_present_in_element((By.ID, "invalid-at"), "invalidated"))
        assert not browser.find_elements(By.ID, "invalidate")
        browser.get(f"{face.base}/players/{mine}")
        browser.find_element(By.CSS_SELECTOR, "#forget button").click()
        WebDriverWait(browser, 5).until(expected_conditions.alert_is_present())
        assert mine in browser.switch_to.alert.text
        browser.switch_to.alert.accept()
        _wait_for(browser, "forgotten")
        assert browser.find_element(By.ID, "forgotten").text.startswith("2 memories erased")
        browser.get(f"{face.base}/players/{mine}")
        _wait_for(browser, "no-memories")

    await asyncio.to_thread(look)
    listed = await admin_stub.ListMemories(svc.ListMemoriesRequest(
        scope=pb.Scope(user_id=mine, heroine_id="letia"), include_invalidated=True), metadata=ADMIN)
    assert list(listed.memories) == []
