package dev.sandboxsdk.mcp.internal;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.concurrent.CompletableFuture;
import java.util.function.BiFunction;
import java.util.function.Function;

/**
 * One tool's implementation: called with arguments already checked against the tool's
 * inputSchema; completes with the outcome, or exceptionally with a failure that
 * {@link SandboxTools#describe} turns into an error result.
 */
@FunctionalInterface
interface ToolHandler {
  CompletableFuture<ToolOutcome> call(ObjectNode args, CallContext ctx);

  /** A handler that does its work on the calling thread (a worker of the server). */
  static ToolHandler blocking(BiFunction<ObjectNode, CallContext, ToolOutcome> body) {
    return (args, ctx) -> CompletableFuture.completedFuture(body.apply(args, ctx));
  }

  /** {@link #blocking(BiFunction)} for a tool that needs only its arguments. */
  static ToolHandler blocking(Function<ObjectNode, ToolOutcome> body) {
    return (args, ctx) -> CompletableFuture.completedFuture(body.apply(args));
  }
}
