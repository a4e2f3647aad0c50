"""The MCP server: pagemill's tools for agents, over stdio (`pagemill mcp`) or streamable HTTP (`/mcp`).

    api.py      the REST API as the tools call it, with the caller's key (over HTTP, or in-process on the gateway)
    sources.py  what `parse_document` may read: a path under the allowed roots, a URL (webhooks' SSRF rules), base64
    tools.py    the MCP server and its tools; pagemill's errors become MCP errors carrying pagemill's codes
    mount.py    `/mcp` on the gateway: the API key checked, one stateless streamable HTTP request per call
"""
