/**
 * The MCP server's implementation: JSON-RPC and the MCP lifecycle, the stdio and HTTP
 * transports, the tools and their schemas, and the sandbox providers it drives.
 *
 * <p><b>Internal.</b> Not public API: it may change in any release without notice. The tool names
 * and arguments it publishes are public (docs/mcp.md); the classes are not.
 */
package dev.sandboxsdk.mcp.internal;
