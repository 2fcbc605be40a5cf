package dev.sandboxsdk.agent.http;

import com.sun.net.httpserver.HttpExchange;
import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import dev.sandboxsdk.agent.fs.Workspace;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;

/**
 * The authenticated routes of the API. Each capability's route group registers its own: a fixed path, or a
 * prefix, one identifier segment and a fixed rest ({@code /api/process/{id}/logs}). A request
 * finds its route by path (fixed paths first), then its handler by method; a method the route does
 * not serve gets 405 naming those it does, in the order they were registered. Filled while the
 * agent starts, read-only afterwards, so thread-safe once built.
 */
public final class Routes {
  /** Handles a request on a fixed path. */
  public interface Handler {
    /** Answers {@code exchange}; an {@link AgentException} it throws becomes the protocol's error answer. */
    void handle(HttpExchange exchange) throws IOException;
  }

  /** Handles a request on a path with an identifier, given decoded. */
  public interface IdHandler {
    /** Answers {@code exchange} for the decoded {@code id}; errors as {@link Handler#handle}. */
    void handle(HttpExchange exchange, String id) throws IOException;
  }

  private final Map<String, Map<String, IdHandler>> fixed = new HashMap<>();
  private final List<Template> templates = new ArrayList<>();

  /** A path {@code prefix + id + suffix}, the id one non-empty segment, decoded by {@code decode}. */
  private record Template(String prefix, String suffix, UnaryOperator<String> decode, Map<String, IdHandler> methods) {
    /** The decoded id if {@code path} is of this template, else null. */
    String match(String path) {
      if (!path.startsWith(prefix)) {
        return null;
      }
      String rest = path.substring(prefix.length());
      int slash = rest.indexOf('/');
      String segment = slash < 0 ? rest : rest.substring(0, slash);
      String tail = slash < 0 ? "" : rest.substring(slash);
      return segment.isEmpty() || !tail.equals(suffix) ? null : decode.apply(segment);
    }
  }

  /** {@code handler} run with the command user's file system identity, if there is one (see {@link Workspace#asUser}). */
  public static Handler asUser(Workspace workspace, Handler handler) {
    return exchange -> workspace.asUser(() -> {
      handler.handle(exchange);
      return null;
    });
  }

  /**
   * Serves {@code method} on the fixed {@code path}; a second method on the same path is added
   * after the first in 405's list of allowed methods.
   *
   * @return this, to chain the group's routes
   */
  public Routes on(String method, String path, Handler handler) {
    fixed.computeIfAbsent(path, p -> new LinkedHashMap<>()).put(method, (exchange, none) -> handler.handle(exchange));
    return this;
  }

  /**
   * Serves {@code method} on {@code prefix + id + suffix} ({@code suffix} empty or starting with
   * a slash); {@code decode} turns the raw segment into the id, or refuses it with a client error.
   * Templates are tried in the order they were first registered.
   *
   * @return this, to chain the group's routes
   */
  public Routes on(String method, String prefix, String suffix, UnaryOperator<String> decode, IdHandler handler) {
    for (Template t : templates) {
      if (t.prefix().equals(prefix) && t.suffix().equals(suffix)) {
        t.methods().put(method, handler);
        return this;
      }
    }
    Map<String, IdHandler> methods = new LinkedHashMap<>();
    methods.put(method, handler);
    templates.add(new Template(prefix, suffix, decode, methods));
    return this;
  }

  /** Runs the handler of {@code method} on {@code path}: 404 for an unknown path, 405 for an unserved method. */
  void dispatch(HttpExchange exchange, String method, String path) throws IOException {
    Map<String, IdHandler> methods = fixed.get(path);
    String id = null;
    if (methods == null) {
      for (Template t : templates) {
        id = t.match(path);
        if (id != null) {
          methods = t.methods();
          break;
        }
      }
    }
    if (methods == null) {
      throw Replies.notFound(path);
    }
    IdHandler handler = methods.get(method);
    if (handler == null) {
      String allowed = String.join(", ", methods.keySet());
      throw new AgentException(ErrorCode.METHOD_NOT_ALLOWED,
          "method " + method + " is not allowed here; use " + allowed, Map.of("allow", allowed));
    }
    handler.handle(exchange, id);
  }
}
