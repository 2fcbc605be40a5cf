package dev.sandboxsdk;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Proxy;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * A capability is a facet: {@link Sandbox} declares its accessor, and every provider that wraps a
 * sandbox hands out its delegate's facet without a forwarder per method.
 */
class ForwardingSandboxTest {

  /** Every facet accessor of {@link Sandbox}: no parameters, and a {@code Sandbox*} interface as its type. */
  private static List<Method> facetAccessors() {
    return Arrays.stream(Sandbox.class.getMethods())
        .filter(m -> !Modifier.isStatic(m.getModifiers()) && m.getParameterCount() == 0)
        .filter(m -> m.getReturnType().isInterface() && m.getReturnType().getSimpleName().startsWith("Sandbox"))
        .toList();
  }

  @Test
  void theSandboxHasOneFacetPerCapabilityBesideTheExecutionApi() {
    assertThat(facetAccessors()).extracting(Method::getName)
        .containsExactlyInAnyOrder("files", "ports", "git", "checkpoints", "terminals", "egress", "sessions", "code");
  }

  @Test
  void theExecutionApiHasTwoFormsPerCallAndNoOtherOverloads() {
    List<String> declared = Arrays.stream(Sandbox.class.getDeclaredMethods())
        .filter(m -> !Modifier.isStatic(m.getModifiers()) && !m.isSynthetic())
        .map(ForwardingSandboxTest::signature)
        .toList();

    assertThat(declared).containsExactlyInAnyOrder(
        "exec(String)", "exec(Command, ExecOptions)",
        "execAsync(String)", "execAsync(Command, ExecOptions)",
        "execStream(String)", "execStream(Command, ExecOptions)",
        "startProcess(String)", "startProcess(Command, ProcessOptions)",
        "listProcesses()", "getProcess(String)", "attachProcess(String)", "killProcess(String, Signal)",
        "killAllProcesses()", "getProcessLogs(String)", "getProcessLogs(String, LogRange)",
        "streamProcessLogs(String)", "streamProcessLogs(String, LogRange)", "cleanupCompletedProcesses()",
        "files()", "ports()", "git()", "checkpoints()", "terminals()", "egress()", "sessions()", "code()", "destroy()",
        "close()");
    assertThat(Arrays.stream(Sandbox.class.getDeclaredMethods()).filter(Method::isDefault).map(ForwardingSandboxTest::signature))
        .as("the one-argument forms delegate to the full form")
        .containsExactlyInAnyOrder("exec(String)", "execAsync(String)", "execStream(String)", "startProcess(String)",
            "getProcessLogs(String)", "streamProcessLogs(String)");
  }

  @Test
  void aForwardingSandboxForwardsEveryAbstractMethodButTheLifecycleAndNoDefaultOne() throws Exception {
    List<String> forwarded = Arrays.stream(ForwardingSandbox.class.getDeclaredMethods())
        .filter(m -> Modifier.isPublic(m.getModifiers()) && !m.isSynthetic())
        .map(ForwardingSandboxTest::signature)
        .toList();
    List<String> abstractOnes = Arrays.stream(Sandbox.class.getDeclaredMethods())
        .filter(m -> Modifier.isAbstract(m.getModifiers()))
        .map(ForwardingSandboxTest::signature)
        .filter(sig -> !sig.equals("destroy()") && !sig.equals("close()"))
        .toList();

    assertThat(forwarded).containsExactlyInAnyOrderElementsOf(abstractOnes);
  }

  private static String signature(Method m) {
    return m.getName() + Arrays.stream(m.getParameterTypes()).map(Class::getSimpleName)
        .collect(Collectors.joining(", ", "(", ")"));
  }

  @Test
  void aForwardingSandboxHandsOutItsDelegatesFacets() throws Exception {
    Map<String, Object> facets = new HashMap<>();
    Sandbox delegate = (Sandbox) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] {Sandbox.class},
        (proxy, method, args) -> {
          if (method.getName().equals("toString")) {
            return "delegate";
          }
          Class<?> type = method.getReturnType();
          if (args == null && type.isInterface() && type.getSimpleName().startsWith("Sandbox")) {
            return facets.computeIfAbsent(method.getName(), n -> Proxy.newProxyInstance(getClass().getClassLoader(),
                new Class<?>[] {type}, (p, m, a) -> {
                  throw new UnsupportedOperationException(m.toString());
                }));
          }
          throw new UnsupportedOperationException(method.toString());
        });
    Sandbox forwarding = new ForwardingSandbox() {
      @Override
      protected Sandbox delegate() {
        return delegate;
      }

      @Override
      public void destroy() {}

      @Override
      public void close() {}
    };

    for (Method accessor : facetAccessors()) {
      assertThat(accessor.invoke(forwarding)).as(accessor.getName()).isNotNull().isSameAs(accessor.invoke(delegate));
    }
  }
}
