"""Chunking that never cuts a sentence: consecutive whole sentences grouped up to a token budget.

llama-index's SentenceSplitter cuts any sentence longer than its chunk size into clauses or words, and the
small chunks that retrieve best on abstracts (measured in benchmarks/retrieval_modes.py) would cut many
sentences. This parser keeps each sentence whole (a sentence over the budget becomes a chunk of its own) and is
a llama-index NodeParser, so it runs inside the IngestionPipeline like the library's own parsers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.node_parser import NodeParser
from llama_index.core.node_parser.node_utils import build_nodes_from_splits
from llama_index.core.schema import BaseNode, Document
from pydantic import Field

from rag.text import split_sentences


def approx_tokens(text: str) -> int:
    """Word-piece count estimate (about 1.3 per word) without loading a tokenizer."""
    return int(len(text.split()) * 1.3) + 1


def group_sentences(sentences: Sequence[str], budget: int) -> list[str]:
    """Greedy grouping: add sentences to the current chunk while it stays within `budget` tokens."""
    chunks: list[str] = []
    current: list[str] = []
    size = 0
    for s in sentences:
        n = approx_tokens(s)
        if current and size + n > budget:
            chunks.append(" ".join(current))
            current, size = [], 0
        current.append(s)
        size += n
    if current:
        chunks.append(" ".join(current))
    return chunks


class WholeSentenceChunker(NodeParser):
    """Splits documents into chunks of whole sentences, with ids '<doc id>:<n>' stable across runs."""

    chunk_tokens: int = Field(default=48, description="Token budget per chunk (a longer sentence stays whole).")

    @classmethod
    def class_name(cls) -> str:
        return "WholeSentenceChunker"

    def _parse_nodes(self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any) -> list[BaseNode]:
        out: list[BaseNode] = []
        for doc in nodes:
            chunks = group_sentences(split_sentences(doc.get_content()), self.chunk_tokens)
            out.extend(build_nodes_from_splits(chunks, doc, id_func=lambda i, d: f"{d.id_}:{i}"))
        return out


def chunk_document(doc: Document, chunk_tokens: int) -> list[BaseNode]:
    """Chunks of one document (used by tests and benchmarks outside a pipeline)."""
    return WholeSentenceChunker(chunk_tokens=chunk_tokens, include_prev_next_rel=False).get_nodes_from_documents([doc])

