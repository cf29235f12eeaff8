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

from .conftest import free_port
from .faults import FaultServer

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
