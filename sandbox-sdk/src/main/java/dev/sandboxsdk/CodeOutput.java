package dev.sandboxsdk;

import java.util.Base64;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * One rich output of a run: the value of its last expression, or a figure, as a bundle of
 * representations by MIME type ({@code text/plain}, {@code text/html}, {@code image/png}, {@code
 * image/svg+xml}, {@code application/json}, {@code text/markdown}, ...). Images are base64 text;
 * {@code application/json} is JSON text.
 *
 * @param data the representations by MIME type
 * @param isMainResult whether this is the value of the code's last expression (a figure is not)
 */
public record CodeOutput(Map<String, String> data, boolean isMainResult) {
  public CodeOutput {
    data = Map.copyOf(Objects.requireNonNull(data, "data == null"));
  }

  /** The representation of type {@code mime}, if there is one. */
  public Optional<String> get(String mime) {
    return Optional.ofNullable(data.get(mime));
  }

  /** The {@code text/plain} representation (the value's repr), or an empty string. */
  public String text() {
    return data.getOrDefault("text/plain", "");
  }

  /** The {@code image/png} bytes, if this output is (or has) a PNG image. */
  public Optional<byte[]> png() {
    return get("image/png").map(Base64.getMimeDecoder()::decode);
  }

  @Override
  public String toString() {
    return "CodeOutput" + data.keySet() + (isMainResult ? " (value)" : "");
  }
}
