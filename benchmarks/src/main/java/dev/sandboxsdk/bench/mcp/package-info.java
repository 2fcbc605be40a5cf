/**
 * The MCP server ({@code sandbox-mcp.jar}) against the SDK it wraps: {@code McpBench}, run by
 * {@code benchmarks/scripts/mcp.sh}.
 */
package dev.sandboxsdk.bench.mcp;
