"""The UI is not exposed by default: it listens on 127.0.0.1 only, a configured login guards the page and the API,
and neither the login password nor the LLM API key is ever sent to a browser or an API caller."""

from __future__ import annotations

import ipaddress
import json
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from gradio_client import Client
from gradio_client.exceptions import AuthenticationError

import ui.app
from rag.settings import Settings, load_settings

from tests.conftest import free_port
from tests.faults import FaultServer

USER = "alice"
PASSWORD = "pw-7Kx-SECRET"  # recognisable: a short password like "pw" could occur in any page by chance
SECRET = "sk-test-SECRET-123"
PROC_NET = Path("/proc/net")


def _address(hex_addr: str) -> str:
    raw = bytes.fromhex(hex_addr)
    if len(raw) == 4:
        return str(ipaddress.IPv4Address(raw[::-1]))
    return str(ipaddress.IPv6Address(b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))))


def listening_on(port: int) -> list[str]:
    """Every local address with a TCP socket listening on `port` (any process), from /proc/net/tcp{,6}."""
    found = []
    for name in ("tcp", "tcp6"):
        path = PROC_NET / name
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            local, state = fields[1], fields[3]
            addr, _, port_hex = local.rpartition(":")
            if state == "0A" and int(port_hex, 16) == port:  # 0A = LISTEN
                found.append(_address(addr))
    return sorted(found)


def local_addresses() -> set[str]:
    """This machine's IPv4 addresses (the LOCAL host routes of /proc/net/fib_trie)."""
    found, last = set(), None
    for line in (PROC_NET / "fib_trie").read_text().splitlines():
        if "|--" in line:
            last = line.split("|--")[1].strip()
        elif "/32 host LOCAL" in line and last:
            found.add(last)
    return found


def refused(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=3):
            return False
    except ConnectionRefusedError:
        return True


@contextmanager
def launched(settings: Settings) -> Iterator[str]:
    """The UI as `papers ui` starts it (ui.app.launch), without blocking."""
    demo = ui.app.launch(settings, prevent_thread_lock=True)
    try:
        yield f"http://{settings.ui_host}:{settings.ui_port}/"
    finally:
        demo.close()


pytestmark = pytest.mark.skipif(not (PROC_NET / "tcp").exists(), reason="reads listening sockets from /proc/net")


def test_default_host_is_loopback() -> None:
    assert Settings.model_fields["ui_host"].default == "127.0.0.1"
    assert Settings(_env_file=None).ui_host == "127.0.0.1"
    assert Settings(_env_file=None).ui_auth is None


@pytest.mark.slow
def test_ui_listens_on_loopback_only(corpus_settings) -> None:  # noqa: ANN001
    settings = corpus_settings.model_copy(update={"ui_port": free_port()})
    assert settings.ui_host == "127.0.0.1"
    with launched(settings) as url:
        assert httpx.get(url, timeout=30).status_code == 200
        assert listening_on(settings.ui_port) == ["127.0.0.1"]
        others = sorted(a for a in local_addresses() if not a.startswith("127.")) + ["127.0.0.2"]
        for address in others:  # every other address of this machine (and another loopback one) refuses
            assert refused(address, settings.ui_port), address


@pytest.mark.slow
def test_ui_listens_where_configured(corpus_settings) -> None:  # noqa: ANN001
    """Control for the test above: launch really passes the configured host (here another loopback address)."""
    settings = corpus_settings.model_copy(update={"ui_port": free_port(), "ui_host": "127.0.0.2"})
    with launched(settings) as url:
        assert httpx.get(url, timeout=30).status_code == 200
        assert listening_on(settings.ui_port) == ["127.0.0.2"]
        assert refused("127.0.0.1", settings.ui_port)


@pytest.mark.slow
def test_login_guards_page_and_api_and_secrets_stay_on_the_server(corpus_settings,  # noqa: ANN001
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    with FaultServer("error") as llm:
        monkeypatch.setenv("PAPERS_UI_AUTH", f"{USER}:{PASSWORD}")
        monkeypatch.setenv("OPENAI_API_KEY", SECRET)
        monkeypatch.setenv("OPENAI_BASE_URL", llm.url)
        settings = load_settings(_env_file=None, data_dir=corpus_settings.data_dir, ui_port=free_port(),
                                 llm_timeout_s=5)
        assert settings.ui_auth is not None and settings.ui_host == "127.0.0.1"
        question = ["Which paper proposes ReLoop?", "auto", 5, None]
        with launched(settings) as url:
            # Without the login: the API and the app's config are refused.
            assert httpx.post(url + "gradio_api/call/ask", json={"data": question}, timeout=30).status_code == 401
            assert httpx.get(url + "config", timeout=30).status_code == 401
            with pytest.raises(AuthenticationError):
                Client(url, verbose=False, analytics_enabled=False)
            with pytest.raises(ValueError, match="Could not login"):
                Client(url, verbose=False, analytics_enabled=False, auth=(USER, "wrong"))

            # With it: answers, the LLM's failure explained, the key nowhere in them.
            client = Client(url, verbose=False, analytics_enabled=False, auth=(USER, PASSWORD))
            try:
                d = client.submit(*question, api_name="/ask").result(timeout=120)
            finally:
                client.close()
            assert d["citations"][0]["label"] == "ReLoop" and d["mode"] == "extractive" and "HTTP 500" in d["notice"]
            assert llm.requests and llm.requests[0]["headers"]["Authorization"] == f"Bearer {SECRET}"

            pages = {"login page": httpx.get(url, timeout=30).text}
            with httpx.Client(base_url=url, timeout=30) as browser:
                assert browser.post("login", data={"username": USER, "password": PASSWORD}).status_code == 200
                for path in ("", "config", "gradio_api/info"):
                    r = browser.get(path)
                    assert r.status_code == 200, (path, r.status_code)
                    pages[path or "page"] = r.text
        assert "Paper Q&A" in pages["config"] and "/ask" in pages["gradio_api/info"]  # the real app, logged in
        pages["/ask answer"] = json.dumps(d, ensure_ascii=False)
        for where, text in pages.items():
            for secret in (PASSWORD, SECRET, "SECRET-123"):
                assert secret not in text, f"{secret!r} is in the {where}"


# --- PAPERS_UI_AUTH is validated; failed logins are slowed down ----------------------------------------

@pytest.mark.parametrize("bad", ["aliceSECRETpw", ":SECRETpw", "alice:", " :SECRETpw"])
def test_ui_auth_must_be_user_and_password(bad: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from rag.frontends.cli import app
    from rag.settings import SettingsError

    with pytest.raises(SettingsError) as e:
        load_settings(_env_file=None, ui_auth=bad)
    message = str(e.value)
    assert "PAPERS_UI_AUTH" in message and "user:password" in message and "(got ***)" in message, message
    assert "SECRET" not in message and "alice" not in message
    monkeypatch.setenv("PAPERS_UI_AUTH", bad)
    r = CliRunner().invoke(app, ["ui", "--port", str(free_port())])
    assert r.exit_code == 2 and "PAPERS_UI_AUTH" in r.output and "SECRET" not in r.output, r.output


def test_login_guard_slows_repeated_failures(monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio
    import time

    from ui import login

    monkeypatch.setattr(login, "FIRST_DELAY_S", 0.05)
    guard = login.LoginGuard(USER, PASSWORD)

    async def attempts() -> tuple[float, float, list[bool], bool]:
        t0 = time.monotonic()
        assert not await guard.check(USER, "wrong")  # the first failure costs nothing
        first = time.monotonic() - t0
        t0 = time.monotonic()
        results = await asyncio.gather(*(guard.check(USER, f"wrong{i}") for i in range(4)))  # at once: they queue
        queued = time.monotonic() - t0
        ok = await guard.check(USER, PASSWORD)
        return first, queued, results, ok

    import inspect

    assert inspect.iscoroutinefunction(guard.check)  # what gradio tests before awaiting it
    first, queued, results, ok = asyncio.run(attempts())
    assert first < 0.05 and not any(results) and ok
    assert queued >= 0.05 + 0.1 + 0.2 + 0.4 - 0.02, queued  # doubling waits, one after another
    assert guard.delay() == 0.0  # a success resets the source's count


def test_a_flood_from_elsewhere_never_locks_out_the_right_password(monkeypatch: pytest.MonkeyPatch) -> None:
    """Wrong logins for the owner's name from another address wait in their own queue; the owner's attempt from
    its address waits at most the shared bound."""
    import asyncio
    import time

    from ui import login

    monkeypatch.setattr(login, "FIRST_DELAY_S", 0.05)
    monkeypatch.setattr(login, "MAX_DELAY_S", 2.0)
    guard = login.LoginGuard(USER, PASSWORD)

    async def from_source(source: str, password: str) -> bool:
        login.CLIENT.set(source)
        return await guard.check(USER, password)

    async def flood_then_owner() -> tuple[float, bool]:
        attack = [asyncio.create_task(from_source("10.0.0.66", f"guess{i}")) for i in range(15)]
        await asyncio.sleep(0.2)  # the flood is queued and waiting
        t0 = time.monotonic()
        ok = await from_source("10.0.0.1", PASSWORD)
        took = time.monotonic() - t0
        for task in attack:
            task.cancel()
        return took, ok

    took, ok = asyncio.run(flood_then_owner())
    assert ok and took <= login.SHARED_MAX_S + 0.2, took


@pytest.mark.slow
def test_real_ui_slows_wrong_logins(corpus_settings, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    import time
    from concurrent.futures import ThreadPoolExecutor

    monkeypatch.setenv("PAPERS_UI_AUTH", f"{USER}:{PASSWORD}")
    settings = load_settings(_env_file=None, data_dir=corpus_settings.data_dir, ui_port=free_port())
    with launched(settings) as url:
        def login(password: str) -> int:
            return httpx.post(url + "login", data={"username": USER, "password": password}, timeout=60).status_code

        t0 = time.monotonic()
        with ThreadPoolExecutor(6) as pool:  # six wrong guesses fired at once
            codes = list(pool.map(login, [f"guess{i}" for i in range(6)]))
        took = time.monotonic() - t0
        assert codes == [400] * 6
        assert took >= 0.25 + 0.5 + 1 + 2 + 4 - 0.2, took  # 7.75 s of doubling waits; unthrottled: well under 1 s
        assert login(PASSWORD) == 200


@pytest.mark.parametrize("client, headers, source", [
    (("10.0.0.7", 5000), [], "10.0.0.7"),
    (("127.0.0.2", 5000), [(b"x-forwarded-for", b"127.0.0.2")], "forwarded"),  # uvicorn put the header's address
    (("10.0.0.7", 5000), [(b"X-Forwarded-For", b"10.0.0.1, 10.0.0.2")], "forwarded"),
    (("10.0.0.7", 5000), [(b"forwarded", b"for=10.0.0.1")], "forwarded"),
    (None, [], ""),
])
def test_login_source_is_the_peer_and_forwarding_headers_are_one_source(client, headers, source) -> None:  # noqa: ANN001
    from ui.login import source_of

    assert source_of({"type": "http", "client": client, "headers": headers}) == source


def _logins(url: str, attempts: list[tuple[str, str, dict[str, str]]]) -> list[tuple[int, float]]:
    """Each (source address, password, headers) as a POST /login from that address, all at once: (status, s)."""
    import time
    from concurrent.futures import ThreadPoolExecutor

    clients = [httpx.Client(transport=httpx.HTTPTransport(local_address=src), timeout=120) for src, _, _ in attempts]

    def one(i: int) -> tuple[int, float]:
        _, password, headers = attempts[i]
        t0 = time.monotonic()
        status = clients[i].post(url + "login", data={"username": USER, "password": password},
                                 headers=headers).status_code
        return status, time.monotonic() - t0

    try:
        with ThreadPoolExecutor(len(attempts)) as pool:
            return list(pool.map(one, range(len(attempts))))
    finally:
        for c in clients:
            c.close()


@pytest.mark.slow
def test_a_forwarded_header_never_lends_the_owner_its_delays(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Wrong logins from 127.0.0.1 claiming the owner's address (X-Forwarded-For, which uvicorn obeys from
    127.0.0.1) wait in their own queue: the owner's right password from that address is not held up (it waited
    91 s). A flood from many other addresses delays the owner by SHARED_MAX_S at most. Real UI, real middleware."""
    import time

    from ui import login

    monkeypatch.setattr(login, "FIRST_DELAY_S", 0.2)
    monkeypatch.setattr(login, "MAX_DELAY_S", 1.0)
    monkeypatch.setenv("PAPERS_UI_AUTH", f"{USER}:{PASSWORD}")
    settings = load_settings(_env_file=None, data_dir=tmp_path / "data", ui_port=free_port())
    spoofed = [("127.0.0.1", f"guess{i}", {"X-Forwarded-For": "127.0.0.2"}) for i in range(5)]
    spoofed += [("127.0.0.1", "guess-f", {"Forwarded": "for=127.0.0.2"})]
    with launched(settings) as url:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(1) as pool:
            flood = pool.submit(_logins, url, spoofed)
            time.sleep(0.5)  # the spoofed attempts are queued and waiting
            [(status, took)] = _logins(url, [("127.0.0.2", PASSWORD, {})])
            attackers = flood.result()
        assert status == 200 and took < 0.5, took
        # The premise: the spoofed attempts were slowed, one after another (0.2 + 0.4 + 0.8 + 1 + 1 s).
        assert {s for s, _ in attackers} == {400} and max(t for _, t in attackers) >= 3.4 - 0.2, attackers
        # Thirty wrong logins from thirty other addresses, then the owner: the shared wait (SHARED_MAX_S) at most.
        _logins(url, [(f"127.0.1.{i + 1}", f"guess{i}", {}) for i in range(30)])
        [(status, took)] = _logins(url, [("127.0.0.3", PASSWORD, {})])
        assert status == 200 and took < login.SHARED_MAX_S + 0.5, took


@pytest.mark.slow
def test_url_credentials_never_reach_the_api_or_pages(corpus_settings, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    with FaultServer("error") as llm:
        # URL credentials alone (with an API key too, the start is refused: only one can be sent)
        monkeypatch.setenv("OPENAI_BASE_URL", llm.url.replace("http://", "http://admin:URLSECRET456@"))
        settings = load_settings(_env_file=None, data_dir=corpus_settings.data_dir, ui_port=free_port(),
                                 llm_timeout_s=5)
        with launched(settings) as url:
            client = Client(url, verbose=False, analytics_enabled=False)
            try:
                d = client.submit("Which paper proposes ReLoop?", "auto", 5, None, api_name="/ask").result(timeout=120)
            finally:
                client.close()
            pages = {p: httpx.get(url + p, timeout=30).text for p in ("", "config", "gradio_api/info")}
        assert llm.requests, "the LLM was asked"
    assert d["mode"] == "extractive" and "http://***@127.0.0.1" in d["notice"] and "HTTP 500" in d["notice"], d
    pages["/ask answer"] = json.dumps(d, ensure_ascii=False)
    for where, text in pages.items():
        for secret in ("URLSECRET456", "admin:", SECRET):
            assert secret not in text, f"{secret!r} is in the {where}"


@pytest.mark.slow
def test_the_ui_keeps_a_bounded_number_of_sessions(corpus_settings) -> None:  # noqa: ANN001
    settings = corpus_settings.model_copy(update={"ui_port": free_port()})
    demo = ui.app.launch(settings, prevent_thread_lock=True)
    try:
        holder = demo.state_holder
        for i in range(ui.app.SESSIONS_KEPT + 5):  # a session per page load or API client, as gradio makes them
            holder[f"session-{i}"]
        assert len(holder.session_data) == ui.app.SESSIONS_KEPT
        assert "session-0" not in holder and f"session-{ui.app.SESSIONS_KEPT + 4}" in holder
    finally:
        demo.close()
