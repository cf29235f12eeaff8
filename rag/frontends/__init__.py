"""The assistant as a component for other tools: a LlamaIndex retriever and query engine (`llamaindex.py`), an MCP
server (`mcp_server.py`, `papers mcp`) and an OpenAI-compatible chat endpoint (`openai_api.py`, `papers serve`).

Each is an adapter over `rag.service.Assistant`, so every front end gives the same checked answer and citations.
"""
