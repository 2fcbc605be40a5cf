package dev.sandboxsdk.contract;

import dev.sandboxsdk.local.LocalProvider;
import dev.sandboxsdk.SandboxException;
import dev.sandboxsdk.SandboxProvider;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.function.Supplier;

/**
 * The second JVM of the lifecycle tests: finds the sandboxes another JVM left and acts on them.
 * Arguments: the provider ({@code local:<state directory>}, or a class name with a no-argument
 * static {@code fromEnvironment()} factory, for other modules), then actions run in order:
 * {@code list}; {@code exec <name> <script>} (prints {@code EXEC <stdout>} or {@code ERROR <message>});
 * {@code wake <name>}; {@code shutdown <name>}; {@code hold} (prints {@code HOLDING} and waits for
 * the end of stdin). Prints one line per result.
 */
public final class ItLifecycleMain {
  private ItLifecycleMain() {}

  public static void main(String[] args) throws IOException {
    try (SandboxProvider provider = provider(args[0]).get()) {
      List<String> a = List.of(args).subList(1, args.length);
      for (int i = 0; i < a.size(); i++) {
        try {
          switch (a.get(i)) {
            case "list" -> provider.list().forEach(s -> System.out.println("SANDBOX " + s.name() + " " + s.state().wireName()
                + " " + s.createdAt() + " " + s.lastActivityAt()));
            case "exec" -> {
              String name = a.get(++i);
              String script = a.get(++i);
              System.out.println("EXEC " + provider.get(name).orElseThrow().exec(script).stdout().strip());
            }
            case "wake" -> {
              provider.get(a.get(++i)).orElseThrow().wake();
              System.out.println("WOKE");
            }
            case "shutdown" -> {
              provider.get(a.get(++i)).orElseThrow().shutdown();
              System.out.println("SHUT DOWN");
            }
            case "hold" -> {
              System.out.println("HOLDING");
              System.out.flush();
              System.in.readAllBytes();
            }
            default -> throw new IllegalArgumentException("unknown action " + a.get(i));
          }
        } catch (SandboxException e) {
          System.out.println("ERROR " + e.getMessage().replace('\n', ' '));
        }
        System.out.flush();
      }
    }
  }

  private static Supplier<SandboxProvider> provider(String spec) {
    if (spec.startsWith("local:")) {
      return () -> LocalProvider.builder().stateDirectory(Path.of(spec.substring("local:".length()))).build();
    }
    return () -> {
      try {
        return (SandboxProvider) Class.forName(spec).getMethod("fromEnvironment").invoke(null);
      } catch (ReflectiveOperationException e) {
        throw new IllegalStateException(e);
      }
    };
  }
}
