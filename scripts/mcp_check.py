"""An independent MCP client (the Python `mcp` SDK) against `crag mcp` over stdio.

Usage: python mcp_check.py CRAG_BINARY DATA_DIR  (DATA_DIR holds tests/fixtures/corpus).
Lists the tools, searches, reads the best passage back and checks that a bad call is an MCP
error; exits 1 with the reason on any difference.
"""

import asyncio
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp import MCPError

EXPECTED = {"ask", "collections", "find_symbol", "get_chunk", "get_document", "search", "stats"}


def check(condition, message):
    if not condition:
        print(f"mcp-check: FAILED: {message}", file=sys.stderr)
        sys.exit(1)


async def main(binary, data):
    server = StdioServerParameters(command=binary, args=["--data-dir", data, "mcp"])
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write) as session:
            info = await session.initialize()
            check(info.server_info.name == "crag", f"server name {info.server_info.name!r}")
            tools = {t.name: t for t in (await session.list_tools()).tools}
            check(set(tools) == EXPECTED, f"tools {sorted(tools)}")
            check("query" in tools["search"].input_schema["properties"], "search schema")

            found = await session.call_tool("search", {"query": "why are leaves green", "top_k": 3})
            check(not found.is_error, f"search failed: {found.content}")
            results = found.structured_content["results"]
            check(results and results[0]["source"].endswith("photosynthesis.md"), f"top result {results[:1]}")

            chunk = await session.call_tool("get_chunk", {"chunk_id": results[0]["chunk_id"]})
            check(chunk.structured_content["document_id"] == results[0]["document_id"], "get_chunk")

            try:
                await session.call_tool("get_chunk", {"chunk_id": "no-such-document#0"})
                check(False, "an unknown chunk was not refused")
            except MCPError as e:
                check("no-such-document" in e.error.message, f"error message {e.error.message!r}")
            stats = await session.call_tool("stats", {})
            check(stats.structured_content["documents"] == 6, f"stats {stats.structured_content}")
    print("mcp-check: the Python MCP SDK listed 7 tools, searched, read a chunk, got an error back")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
