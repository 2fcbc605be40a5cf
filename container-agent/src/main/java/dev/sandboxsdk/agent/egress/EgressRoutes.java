package dev.sandboxsdk.agent.egress;

import com.sun.net.httpserver.HttpExchange;
import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import dev.sandboxsdk.agent.http.Json;
import dev.sandboxsdk.agent.http.Query;
import dev.sandboxsdk.agent.http.Responses;
import dev.sandboxsdk.agent.http.Routes;
import dev.sandboxsdk.agent.process.OutputBudget;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The egress routes: {@code GET} and {@code PUT /api/egress/policy}, {@code GET
 * /api/egress/events}. On an agent started without {@code --egress-policy} each answers 404
 * {@code NOT_FOUND}: there is no proxy to configure.
 */
public final class EgressRoutes {
  /** Events per answer unless {@code limit} says otherwise. */
  static final int DEFAULT_EVENTS = 100;
  /** The most events per answer: a larger {@code limit} is lowered to it (the audit keeps no more). */
  static final int MAX_EVENTS = EgressAudit.DEFAULT_CAPACITY;

  private final Egress egress;
  private final int maxBodyBytes;
  private final OutputBudget budget;

  /** {@code egress}: null on an agent without egress. */
  public EgressRoutes(Egress egress, int maxBodyBytes, OutputBudget budget) {
    this.egress = egress;
    this.maxBodyBytes = Math.min(maxBodyBytes, EgressRequests.MAX_BODY_BYTES);
    this.budget = budget;
  }

  /** Registers the policy and the events. */
  public void register(Routes routes) {
    routes.on("GET", "/api/egress/policy", this::policy)
        .on("PUT", "/api/egress/policy", this::replace)
        .on("GET", "/api/egress/events", this::events);
  }

  void policy(HttpExchange exchange) throws IOException {
    Query.none(exchange);
    Responses.ok(exchange, answer(running().proxy().policy()));
  }

  void replace(HttpExchange exchange) throws IOException {
    Query.none(exchange);
    Egress e = running();
    Json body;
    try {
      body = Json.read(exchange, maxBodyBytes, budget);
    } catch (AgentException tooLarge) {
      if (tooLarge.code() != ErrorCode.PAYLOAD_TOO_LARGE) {
        throw tooLarge;
      }
      // the limit here is the policy's own, not only --max-body-bytes
      throw new AgentException(ErrorCode.PAYLOAD_TOO_LARGE, "an egress policy is at most " + maxBodyBytes + " bytes",
          Map.of("limit", maxBodyBytes));
    }
    EgressPolicy next = EgressRequests.parse(body);
    e.proxy().update(next);
    Responses.ok(exchange, answer(next));
  }

  void events(HttpExchange exchange) throws IOException {
    Query q = Query.parse(exchange.getRequestURI(), Set.of("since", "limit"));
    long since = q.integer("since", 0, Long.MAX_VALUE, 0);
    long limit = Math.min(MAX_EVENTS, q.integer("limit", 1, Long.MAX_VALUE, DEFAULT_EVENTS));
    EgressAudit audit = running().proxy().audit();
    long last = audit.lastSequence(); // before the events: a reader asking after it misses none
    List<EgressEvent> after = audit.since(since);
    List<EgressMessages.Event> out = new ArrayList<>();
    for (EgressEvent ev : after) {
      if (out.size() == limit) {
        break;
      }
      out.add(EgressMessages.Event.of(ev));
    }
    boolean more = after.size() > out.size();
    long next = more ? out.get(out.size() - 1).sequence() : Math.max(last, out.isEmpty() ? 0
        : out.get(out.size() - 1).sequence());
    Responses.ok(exchange, new EgressMessages.Events(out, next, more));
  }

  private Egress running() {
    if (egress == null) {
      throw new AgentException(ErrorCode.NOT_FOUND, "egress is not enabled on this agent: start it with"
          + " --egress-policy FILE");
    }
    return egress;
  }

  private EgressMessages.Policy answer(EgressPolicy p) {
    return new EgressMessages.Policy(EgressRequests.name(p.mode()), EgressRequests.rules(p), egress.proxyUrl());
  }
}
