package dev.sandboxsdk.agent.ports;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonInclude.Include;
import java.util.List;

/**
 * Wire records of the port routes: the events of POST /api/port-watch ({@link PortWatchRoutes}) and
 * the exposed ports ({@link ProxyRoutes}). Components are written in declaration order; a
 * component marked {@code NON_NULL} is left out when null, every other one is always written.
 */
final class PortMessages {
  private PortMessages() {
  }

  /** {@code watching}: the watch started. */
  record WatchingEvent(String type, int port) {
    WatchingEvent(int port) {
      this("watching", port);
    }
  }

  /** {@code ready}: the port answered; {@code statusCode} for an http check. */
  record ReadyEvent(String type, int port, @JsonInclude(Include.NON_NULL) Integer statusCode) {
    ReadyEvent(int port, Integer statusCode) {
      this("ready", port, statusCode);
    }
  }

  /** {@code process_exited}: the process that was to open the port ended first. */
  record ExitedEvent(String type, int port, @JsonInclude(Include.NON_NULL) Integer exitCode, String processId,
      String status, @JsonInclude(Include.NON_NULL) String signal) {
    ExitedEvent(int port, Integer exitCode, String processId, String status, String signal) {
      this("process_exited", port, exitCode, processId, status, signal);
    }
  }

  /** {@code error}: the watch timed out ({@code TIMEOUT}) or could not go on. */
  record ErrorEvent(String type, int port, String error, String code) {
    ErrorEvent(int port, String error, String code) {
      this("error", port, error, code);
    }
  }

  /** An exposed port: POST /api/expose-port, and each entry of GET /api/exposed-ports. */
  record Exposure(int port, String url, String status, @JsonInclude(Include.NON_NULL) String name, String exposedAt) {
  }

  /** GET /api/exposed-ports. */
  record ExposureList(List<Exposure> ports) {
  }

  /** DELETE /api/exposed-ports/{port}. */
  record Unexposed(int port) {
  }
}
