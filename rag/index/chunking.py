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
from llama_index.core.schema import BaseNode, Document, Node, TextNode, TransformComponent
from pydantic import Field

from rag.corpus.sections import PAGE_KEYS, segments
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


class SectionChunks(TransformComponent):
    """Re-chunks papers that have a layout so chunks stay within one page and section, tagging each chunk.

    Runs right after the ingest splitter: the splitter's nodes of such a paper lend their settings (metadata,
    templates, source relationship) to the new nodes, whose ids follow the same '<paper id>:<n>' scheme.
    """

    layouts: dict[str, tuple[str, str]] = Field(default_factory=dict,
                                                description="paper id -> (text, layout) for papers read with pages")
    chunk_tokens: int = Field(default=32, description="Token budget per chunk, as for every other paper.")

    @classmethod
    def for_papers(cls, papers: Sequence[Any], chunk_tokens: int) -> SectionChunks:
        return cls(layouts={p.paper_id: (p.text, p.layout) for p in papers if getattr(p, "layout", "")},
                   chunk_tokens=chunk_tokens)

    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> list[BaseNode]:
        if not self.layouts:
            return list(nodes)
        out: list[BaseNode] = []
        done: set[str] = set()
        for node in nodes:
            pid = str(node.metadata.get("paper_id", ""))
            if pid not in self.layouts:
                out.append(node)
                continue
            if pid in done:
                continue
            if not isinstance(node, TextNode | Node):  # what the splitters make (others have no text template)
                raise TypeError(f"cannot re-chunk a {type(node).__name__} by page and section")
            done.add(pid)
            text, layout = self.layouts[pid]
            n = 0
            for page, section, piece in segments(text, layout) or [(0, "", text)]:
                for chunk in group_sentences(split_sentences(piece), self.chunk_tokens):
                    meta = dict(node.metadata)
                    if page or section:
                        meta.update(page=page, section=section)
                    out.append(TextNode(
                        id_=f"{pid}:{n}", text=chunk, metadata=meta,
                        excluded_embed_metadata_keys=list(dict.fromkeys(node.excluded_embed_metadata_keys
                                                                        + PAGE_KEYS)),
                        excluded_llm_metadata_keys=list(dict.fromkeys(node.excluded_llm_metadata_keys + PAGE_KEYS)),
                        metadata_template=node.metadata_template, metadata_separator=node.metadata_separator,
                        text_template=node.text_template, relationships=dict(node.relationships)))
                    n += 1
        return out
