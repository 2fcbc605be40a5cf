package dev.sandboxsdk.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sandboxsdk.EgressEvent;
import dev.sandboxsdk.EgressEventPage;
import dev.sandboxsdk.EgressPolicy;
import dev.sandboxsdk.SandboxEgress;
import dev.sandboxsdk.SandboxNotFoundException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.Flow;
import java.util.function.Supplier;
import okhttp3.HttpUrl;

/**
 * The {@link SandboxEgress} of a {@link RealSandbox}, over {@code GET} and {@code PUT
 * /api/egress/policy} and {@code GET /api/egress/events} (docs/protocol/egress.md). An agent
 * without egress answers 404 {@code NOT_FOUND} on each, which {@link ErrorMapper#egressNotEnabled}
 * turns into the exception that says so. {@link #watch} polls the events route
 * ({@link EgressWatchCursor}) behind the same {@link EventPublisher} as the SDK's other streams.
 * Stateless and thread-safe.
 */
final class RealEgress implements SandboxEgress {
  /** How long {@link #watch} waits before asking again when the agent had nothing new. */
  static final Duration POLL_INTERVAL = Duration.ofMillis(500);

  private final AgentHttp http;
  private final Duration pollInterval;

  RealEgress(AgentHttp http) {
    this(http, POLL_INTERVAL);
  }

  RealEgress(AgentHttp http, Duration pollInterval) {
    this.http = http;
    this.pollInterval = pollInterval;
  }

  @Override
  public EgressPolicy policy() {
    return guarded(() -> policy(http.call(http.get(http.url("api", "egress", "policy")), "egress().policy")));
  }

  @Override
  public EgressPolicy update(EgressPolicy policy) {
    Objects.requireNonNull(policy, "policy == null");
    return guarded(() -> policy(http.call(http.put(http.url("api", "egress", "policy"), body(policy)),
        "egress().update")));
  }

  @Override
  public EgressEventPage events(long since, int limit) {
    checkSince(since);
    if (limit < 1) {
      throw new IllegalArgumentException("limit must be at least 1: " + limit);
    }
    return guarded(() -> page(http.call(http.get(eventsUrl(since, limit)), "egress().events")));
  }

  @Override
  public Flow.Publisher<EgressEvent> watch(long since) {
    checkSince(since);
    String what = "egress().watch";
    EgressWatchCursor.Pages pages = (after, onCall) -> {
      try {
        return guarded(() -> page(http.call(http.get(eventsUrl(after, EgressWatchCursor.PAGE)), what, onCall)));
      } catch (IllegalStateException closed) {
        // Closed between two polls of an open watch: the stream ends as every stream does when
        // its sandbox closes, not with the ISE of a call made after close.
        throw http.closedError(closed);
      }
    };
    return new EventPublisher<>(abort -> {
      http.ensureOpen();
      EgressWatchCursor cursor = http.track(new EgressWatchCursor(http, pages, since, pollInterval));
      abort.onAbort(cursor::close);
      return cursor;
    }, http.executor(), t -> http.streamError(t, what));
  }

  private static void checkSince(long since) {
    if (since < 0) {
      throw new IllegalArgumentException("since must be at least 0: " + since);
    }
  }

  private HttpUrl eventsUrl(long since, int limit) {
    return http.url("api", "egress", "events").newBuilder()
        .addQueryParameter("since", Long.toString(since)).addQueryParameter("limit", Integer.toString(limit)).build();
  }

  /** The body of {@code PUT /api/egress/policy}, and of the agent's {@code --egress-policy} file. */
  static ObjectNode body(EgressPolicy policy) {
    ObjectNode body = Wire.MAPPER.createObjectNode().put("mode", policy.mode().wireName());
    policy.rules().forEach(body.putArray("rules")::add);
    return body;
  }

  private static <T> T guarded(Supplier<T> call) {
    try {
      return call.get();
    } catch (SandboxNotFoundException e) {
      throw ErrorMapper.egressNotEnabled(e);
    }
  }

  static EgressPolicy policy(JsonNode n) {
    String what = "egress policy";
    JsonNode rules = n.get("rules");
    if (rules == null || !rules.isArray()) {
      throw Wire.malformed(what, "field 'rules' is missing or not an array");
    }
    List<String> texts = new ArrayList<>(rules.size());
    for (JsonNode r : rules) {
      if (!r.isTextual()) {
        throw Wire.malformed(what, "a rule is not a string");
      }
      texts.add(r.asText());
    }
    try {
      return EgressPolicy.of(EgressPolicy.Mode.fromWire(Wire.text(n, "mode")), texts);
    } catch (IllegalArgumentException e) {
      throw Wire.malformed(what, e.getMessage());
    }
  }

  static EgressEventPage page(JsonNode n) {
    JsonNode items = n.get("events");
    if (items == null || !items.isArray()) {
      throw Wire.malformed("egress events", "field 'events' is missing or not an array");
    }
    List<EgressEvent> events = new ArrayList<>(items.size());
    for (JsonNode item : items) {
      events.add(event(item));
    }
    JsonNode more = n.get("more");
    if (more == null || !more.isBoolean()) {
      throw Wire.malformed("egress events", "field 'more' is missing or not a boolean");
    }
    return new EgressEventPage(events, Wire.longValue(n, "lastSequence"), more.asBoolean());
  }

  private static EgressEvent event(JsonNode n) {
    if (!n.isObject()) {
      throw Wire.malformed("egress event", "not an object");
    }
    JsonNode address = n.get("address");
    if (address != null && !address.isNull() && !address.isTextual()) {
      throw Wire.malformed("egress event", "field 'address' is not a string");
    }
    JsonNode allowed = n.get("allowed");
    if (allowed == null || !allowed.isBoolean()) {
      throw Wire.malformed("egress event", "field 'allowed' is missing or not a boolean");
    }
    return new EgressEvent(Wire.longValue(n, "sequence"), Wire.instant(n, "time"), Wire.text(n, "host"),
        Wire.integer(n, "port"), address == null || address.isNull() ? null : address.asText(), allowed.asBoolean(),
        Wire.text(n, "rule"), Wire.longValue(n, "bytesUp"), Wire.longValue(n, "bytesDown"),
        Wire.instant(n, "closedAt"), Wire.text(n, "outcome"), secretNames(n.get("secrets")));
  }

  /** The optional {@code secrets}: absent or null is none; anything but a list of strings is malformed. */
  private static List<String> secretNames(JsonNode secrets) {
    if (secrets == null || secrets.isNull()) {
      return List.of();
    }
    if (!secrets.isArray()) {
      throw Wire.malformed("egress event", "field 'secrets' is not an array");
    }
    List<String> names = new ArrayList<>(secrets.size());
    for (JsonNode name : secrets) {
      if (!name.isTextual()) {
        throw Wire.malformed("egress event", "field 'secrets' holds a non-string");
      }
      names.add(name.asText());
    }
    return names;
  }
}
