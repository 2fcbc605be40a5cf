package dev.sandboxsdk.mcp.internal;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.UncheckedIOException;
import java.util.concurrent.CompletableFuture;
import java.util.function.BiFunction;
import java.util.function.Function;

/**
 * One tool's implementation: called with arguments already checked against the tool's
 * inputSchema; completes with the outcome, or exceptionally with a failure that
 * {@link SandboxTools#describe} turns into an error result. The factories bind the checked
 * arguments once to the tool's argument record (its group's {@code XxxArgs}), so a tool reads
 * typed components instead of fields by name.
 */
@FunctionalInterface
interface ToolHandler {
  CompletableFuture<ToolOutcome> call(ObjectNode args, CallContext ctx);

  /** A handler that binds its arguments to {@code type} and completes when {@code body}'s future does. */
  static <A> ToolHandler of(Class<A> type, BiFunction<A, CallContext, CompletableFuture<ToolOutcome>> body) {
    return new Typed<>(type, body);
  }

  /** A handler that does its work on the calling thread (a worker of the server). */
  static <A> ToolHandler blocking(Class<A> type, BiFunction<A, CallContext, ToolOutcome> body) {
    return new Typed<>(type, (a, ctx) -> CompletableFuture.completedFuture(body.apply(a, ctx)));
  }

  /** {@link #blocking(Class, BiFunction)} for a tool that needs only its arguments. */
  static <A> ToolHandler blocking(Class<A> type, Function<A, ToolOutcome> body) {
    return new Typed<>(type, (a, ctx) -> CompletableFuture.completedFuture(body.apply(a)));
  }

  /** What the factories make: a tool whose arguments bind to {@code type} (which tests check against the schema). */
  record Typed<A>(Class<A> type, BiFunction<A, CallContext, CompletableFuture<ToolOutcome>> body)
      implements ToolHandler {
    @Override
    public CompletableFuture<ToolOutcome> call(ObjectNode args, CallContext ctx) {
      return body.apply(bind(args, type), ctx);
    }
  }

  /**
   * {@code args}, valid for the tool's inputSchema, as its record. Every schema forbids unknown
   * properties and allows no {@code null}, so a record component is null exactly when its
   * argument is absent. A failure here is a bug (a record that disagrees with {@code tools.json}),
   * never the caller's mistake: it is an internal error, not an error result.
   */
  static <A> A bind(ObjectNode args, Class<A> type) {
    try {
      return Json.MAPPER.treeToValue(args, type);
    } catch (JsonProcessingException e) {
      throw new UncheckedIOException("arguments valid for the schema did not bind to "
          + type.getSimpleName() + ": " + e.getOriginalMessage(), e);
    }
  }
}
