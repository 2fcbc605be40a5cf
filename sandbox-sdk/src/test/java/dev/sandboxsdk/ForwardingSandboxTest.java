package dev.sandboxsdk;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Proxy;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
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
        .containsExactlyInAnyOrder("files", "ports", "git", "checkpoints", "terminals");
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
