/**
 * The MCP server's entry point ({@code sandbox-mcp.jar}), which publishes the SDK's methods as
 * MCP tools over stdio and Streamable HTTP.
 *
 * <p><b>An application, not a library.</b> Its public contract is the command line (flags and
 * environment variables) and the MCP tools with their names and arguments (docs/mcp.md), not
 * these classes.
 */
package dev.sandboxsdk.mcp;
