package dev.sandboxsdk.agent;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/** A failure the agent reports to its client as a protocol error body; never carries secrets. */
public final class AgentException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final ErrorCode code;
  private final Map<String, Object> context;

  public AgentException(ErrorCode code, String message) {
    this(code, message, Map.of());
  }

  public AgentException(ErrorCode code, String message, Map<String, ?> context) {
    super(message, null, false, false);
    this.code = code;
    this.context = Collections.unmodifiableMap(new LinkedHashMap<>(context));
  }

  public static AgentException invalid(String field, String message) {
    return new AgentException(ErrorCode.VALIDATION_FAILED, message, Map.of("field", field));
  }

  public ErrorCode code() {
    return code;
  }

  public Map<String, Object> context() {
    return context;
  }
}
