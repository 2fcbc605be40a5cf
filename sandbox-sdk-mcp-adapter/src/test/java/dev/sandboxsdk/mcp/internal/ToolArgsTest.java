package dev.sandboxsdk.mcp.internal;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.lang.reflect.RecordComponent;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The argument records ({@code XxxArgs}) against the inputSchemas in {@code tools.json}. */
class ToolArgsTest {
  private final ToolCatalog catalog = ToolCatalog.load();

  @Test
  void everyToolBindsToARecordWithExactlyItsSchemasProperties() {
    try (SandboxTools tools = new SandboxTools(AdapterConfig.defaults(), new Sandboxes(AdapterConfig.defaults()))) {
      for (String name : catalog.names()) {
        ToolHandler h = tools.handler(name);
        assertThat(h).as(name).isInstanceOf(ToolHandler.Typed.class);
        Class<?> type = ((ToolHandler.Typed<?>) h).type();
        assertThat(type.isRecord()).as(name).isTrue();
        JsonNode props = catalog.get(name).get("inputSchema").path("properties");
        List<String> schema = new ArrayList<>();
        props.fieldNames().forEachRemaining(schema::add);
        assertThat(Arrays.stream(type.getRecordComponents()).map(RecordComponent::getName))
            .as(name).containsExactlyInAnyOrderElementsOf(schema);
        // Every property given (with a value of its type) binds, and so does none.
        ObjectNode all = Json.object();
        props.properties().forEach(p -> all.set(p.getKey(), sample(p.getValue())));
        assertThat(ToolHandler.bind(all, type)).as(name).isNotNull();
        assertThat(ToolHandler.bind(Json.object(), type)).as(name).isNotNull();
      }
    }
  }

  @Test
  void absentArgumentsAreNullOrJavasDefault() {
    FileArgs.Listing l = ToolHandler.bind(Json.object(), FileArgs.Listing.class);
    assertThat(l).isEqualTo(new FileArgs.Listing(null, false, false, null, null));
    ProcessArgs.Logs p = ToolHandler.bind((ObjectNode) Json.parse("{\"processId\":\"p\"}"), ProcessArgs.Logs.class);
    assertThat(p).isEqualTo(new ProcessArgs.Logs("p", null, 0, 0, null));
  }

  @Test
  void integersWrittenAsDecimalsBindAsTheSchemaAcceptsThem() {
    // The schema's "integer" accepts 5.0 and 1e2 (JSON Schema counts them as integers).
    ObjectNode args = (ObjectNode) Json.parse("{\"port\":8080.0,\"statusMin\":2e2,\"timeoutSeconds\":1.5}");
    PortArgs.WaitFor w = ToolHandler.bind(args, PortArgs.WaitFor.class);
    assertThat(w.port()).isEqualTo(8080);
    assertThat(w.statusMin()).isEqualTo(200);
    assertThat(w.timeoutSeconds()).isEqualTo(1.5);
    ProcessArgs.Logs p = ToolHandler.bind((ObjectNode) Json.parse(
        "{\"processId\":\"p\",\"stdoutOffset\":9007199254740991,\"stderrOffset\":3.0}"), ProcessArgs.Logs.class);
    assertThat(p.stdoutOffset()).isEqualTo(9007199254740991L);
    assertThat(p.stderrOffset()).isEqualTo(3);
  }

  @Test
  void envKeepsTheCallsOrderSoTheFirstBadNameIsReported() {
    ExecArgs.Exec e = ToolHandler.bind((ObjectNode) Json.parse(
        "{\"command\":\"x\",\"env\":{\"B\":\"1\",\"A\":\"2\",\"C\":\"3\"}}"), ExecArgs.Exec.class);
    assertThat(e.env().keySet()).containsExactly("B", "A", "C");
  }

  @Test
  void aPropertyTheRecordLacksIsABugNotAnErrorResult() {
    Throwable t = org.assertj.core.api.Assertions.catchThrowable(() ->
        ToolHandler.bind((ObjectNode) Json.parse("{\"nope\":1}"), GitArgs.Checkout.class));
    assertThat(t).isInstanceOf(java.io.UncheckedIOException.class).hasMessageContaining("Checkout");
    assertThat(SandboxTools.describe(t)).isNull(); // so the server answers -32603, not isError
  }

  private static JsonNode sample(JsonNode schema) {
    return switch (schema.path("type").asText()) {
      case "string" -> Json.MAPPER.valueToTree(schema.has("enum") ? schema.get("enum").get(0).asText() : "x");
      case "integer" -> Json.MAPPER.valueToTree(1);
      case "number" -> Json.MAPPER.valueToTree(1.5);
      case "boolean" -> Json.MAPPER.valueToTree(true);
      case "array" -> Json.MAPPER.valueToTree(List.of("x"));
      case "object" -> Json.MAPPER.valueToTree(Map.of("A", "x"));
      default -> throw new AssertionError("no sample for " + schema);
    };
  }
}
